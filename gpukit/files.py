"""Writing files so that a crash, a Ctrl-C or a full disk never leaves half a file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Callable


def atomic_write(path: str | os.PathLike, write: Callable[[IO], object], *, binary: bool = False) -> Path:
    """Call ``write(fh)`` on a temporary file beside ``path``, then rename it over ``path``.

    A rename within one folder is atomic: readers see the old file or the new one, never a
    partial one. On any error the temporary file is removed and the old file is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # the permissions a plain open() would have given
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def png_bytes(rgb, *, optimize: bool = False) -> bytes:
    """An 8-bit image (height, width[, 3]) as PNG bytes."""
    import io

    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG", optimize=optimize)
    return buf.getvalue()


def write_png(rgb, path: str | os.PathLike, *, optimize: bool = False) -> Path:
    """Write an 8-bit image as a PNG file, atomically (see :func:`atomic_write`)."""
    data = png_bytes(rgb, optimize=optimize)
    return atomic_write(path, lambda fh: fh.write(data), binary=True)


def png_data_uri(rgb, *, optimize: bool = False) -> str:
    """An 8-bit image as a ``data:image/png;base64,...`` address, to inline it in a page."""
    import base64
    return "data:image/png;base64," + base64.b64encode(png_bytes(rgb, optimize=optimize)).decode()


def jpeg_data_uri(rgb, *, quality: int = 88, width: int | None = None) -> str:
    """An 8-bit image as a ``data:image/jpeg;base64,...`` address, shrunk to ``width`` pixels
    across (aspect kept) when it is wider."""
    import base64
    import io

    from PIL import Image
    img = Image.fromarray(rgb)
    if width and img.width > width:
        img = img.resize((width, round(img.height * width / img.width)), Image.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()

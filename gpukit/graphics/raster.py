"""The same spheres as triangles through OpenGL (moderngl, headless EGL): optional.

Each sphere becomes a mesh of triangles (a latitude-longitude sphere, drawn once per sphere with
instancing); the ground sphere, too large for such a mesh, is drawn as the flat square it looks
like near the camera. A vertex shader projects the corners with the same camera as the path
tracer, the rasterizer finds the covered pixels, and a fragment shader lights each one by its
albedo, one directional light and the sky: no reflections, refraction or shadows, which is what
rasterization gives without extra passes. Where moderngl or an EGL driver is missing,
:func:`measure` prints one line and records ``{"status": "not run: <reason>"}``.
"""

from __future__ import annotations

import math
import time

import numpy as np

VERTEX = """
#version 330
uniform mat4 view_proj;
in vec3 position;            // a point of the unit sphere (also its normal)
in vec4 sphere;              // per instance: centre and radius
in vec3 albedo;
out vec3 normal;
out vec3 colour;
void main() {
    normal = position;
    colour = albedo;
    gl_Position = view_proj * vec4(sphere.xyz + sphere.w * position, 1.0);
}
"""
FRAGMENT = """
#version 330
in vec3 normal;
in vec3 colour;
out vec4 frag;
void main() {
    vec3 n = normalize(normal);
    vec3 light = normalize(vec3(0.3, 1.0, 0.4));
    vec3 sky = mix(vec3(1.0), vec3(0.5, 0.7, 1.0), 0.5 * (n.y + 1.0));
    vec3 c = colour * (0.6 * max(dot(n, light), 0.0) + 0.4 * sky);
    frag = vec4(sqrt(clamp(c, 0.0, 1.0)), 1.0);      // the same gamma as the path tracer
}
"""
#: spheres larger than this are drawn as a flat square at their top (the ground)
FLAT_ABOVE = 100.0


def available() -> str | None:
    """None when a headless OpenGL context can be made here, else the reason it cannot."""
    try:
        import moderngl
    except ImportError:
        return "moderngl is not installed"
    try:
        ctx = moderngl.create_standalone_context(backend="egl")
    except Exception as exc:  # noqa: BLE001 - any failure to get a context is the reason
        first = str(exc).splitlines()[0] if str(exc) else ""
        return f"no EGL context ({type(exc).__name__}: {first})"
    ctx.release()
    return None


def sphere_mesh(stacks: int, slices: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit-sphere vertices (float32, n x 3) and triangle indices (int32, m x 3)."""
    theta = np.linspace(0, math.pi, stacks + 1)
    phi = np.linspace(0, 2 * math.pi, slices + 1)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    verts = np.stack([np.sin(t) * np.cos(p), np.cos(t), np.sin(t) * np.sin(p)], axis=-1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(stacks), np.arange(slices), indexing="ij")
    a = (i * (slices + 1) + j).ravel()
    b, c, d = a + slices + 1, a + 1, a + slices + 2
    tris = np.concatenate([np.stack([a, b, c], 1), np.stack([c, b, d], 1)])
    return verts.astype(np.float32), tris.astype(np.int32)


def view_proj(scene, width: int, height: int) -> np.ndarray:
    """The path tracer's camera (look-from, look-at, vertical field of view) as one 4 x 4 matrix."""
    eye, target = np.array(scene.lookfrom, float), np.array(scene.lookat, float)
    w = eye - target
    w /= np.linalg.norm(w)
    u = np.cross((0.0, 1.0, 0.0), w)
    u /= np.linalg.norm(u)
    v = np.cross(w, u)
    view = np.eye(4)
    view[:3, :3] = np.stack([u, v, w])
    view[:3, 3] = -view[:3, :3] @ eye
    f = 1 / math.tan(math.radians(scene.vfov) / 2)
    near, far = 0.1, 5000.0
    proj = np.array([[f * height / width, 0, 0, 0], [0, f, 0, 0],
                     [0, 0, (far + near) / (near - far), 2 * far * near / (near - far)], [0, 0, -1, 0]])
    return (proj @ view).astype(np.float32)


def render_raster(scene, width: int, height: int, *, stacks: int = 16, slices: int = 32,
                  frames: int = 20) -> dict:
    """Draw the scene ``frames`` times; the image and the frame times (first frame apart)."""
    import moderngl
    ctx = moderngl.create_standalone_context(backend="egl")
    try:
        prog = ctx.program(vertex_shader=VERTEX, fragment_shader=FRAGMENT)
        prog["view_proj"].write(view_proj(scene, width, height).T.copy().tobytes())
        small = scene.radius < FLAT_ABOVE
        verts, tris = sphere_mesh(stacks, slices)
        inst = np.concatenate([scene.center[small], scene.radius[small, None], scene.albedo[small]], 1)
        vao = ctx.vertex_array(prog, [(ctx.buffer(verts.tobytes()), "3f", "position"),
                                      (ctx.buffer(inst.astype(np.float32).tobytes()), "4f 3f/i", "sphere", "albedo")],
                               index_buffer=ctx.buffer(tris.tobytes()))
        grounds = []
        for k in np.flatnonzero(~small):               # the ground: a square at the sphere's top
            c, r, a = scene.center[k], float(scene.radius[k]), scene.albedo[k]
            y, s = float(c[1]) + r, r
            quad = np.array([[c[0] - s, y, c[2] - s], [c[0] + s, y, c[2] - s], [c[0] - s, y, c[2] + s],
                             [c[0] + s, y, c[2] + s]], np.float32)
            # drawn as 4 vertices of "unit sphere" space at the origin, scaled by 1, up-facing normals
            ground_prog = ctx.program(vertex_shader=VERTEX.replace("normal = position;", "normal = vec3(0, 1, 0);"),
                                      fragment_shader=FRAGMENT)
            ground_prog["view_proj"].write(view_proj(scene, width, height).T.copy().tobytes())
            one = np.array([[0, 0, 0, 1, *a]], np.float32)
            grounds.append(ctx.vertex_array(ground_prog, [(ctx.buffer(quad.tobytes()), "3f", "position"),
                                                          (ctx.buffer(one.tobytes()), "4f 3f/i", "sphere", "albedo")]))
        fbo = ctx.simple_framebuffer((width, height), components=4)
        query = ctx.query(time=True)

        def frame():
            fbo.use()
            ctx.enable(moderngl.DEPTH_TEST)
            fbo.clear(1.0, 1.0, 1.0, 1.0)
            for g in grounds:
                g.render(moderngl.TRIANGLE_STRIP)
            vao.render(moderngl.TRIANGLES, instances=int(small.sum()))

        t0 = time.perf_counter()
        frame()
        ctx.finish()
        first = time.perf_counter() - t0
        wall, gpu_ns = [], []
        for _ in range(frames):
            t0 = time.perf_counter()
            with query:
                frame()
            ctx.finish()
            wall.append(time.perf_counter() - t0)
            gpu_ns.append(query.elapsed)
        pixels = np.frombuffer(fbo.read(components=3), np.uint8).reshape(height, width, 3)[::-1]
        return {"status": "ok", "renderer": ctx.info["GL_RENDERER"], "vendor": ctx.info["GL_VENDOR"],
                "width": width, "height": height, "stacks": stacks, "slices": slices, "triangles": int(len(tris) * small.sum() + 2 * len(grounds)),
                "first_frame_s": first, "median_s": float(np.median(wall)),
                "gpu_median_s": float(np.median(gpu_ns)) * 1e-9, "frames": frames,
                "image": pixels.astype(np.float32) / 255}
    finally:
        ctx.release()


def measure(scene, width: int = 1920, height: int = 1080, **kw) -> dict:
    """The raster part of the results (the image as a small JPEG), or why it was not run."""
    reason = available()
    if reason:
        print(f"  raster: not run: {reason}", flush=True)
        return {"status": f"not run: {reason}"}
    from .renderer import to_jpeg_uri
    try:
        out = render_raster(scene, width, height, **kw)
    except Exception as exc:  # noqa: BLE001 - a driver that fails mid-way is recorded, not fatal
        first = str(exc).splitlines()[0] if str(exc) else ""
        print(f"  raster: failed: {type(exc).__name__}: {first}", flush=True)
        return {"status": f"not run: failed with {type(exc).__name__}: {first}"}
    out["image"] = to_jpeg_uri(out["image"], 960)
    print(f"  raster: {out['renderer']}, {out['triangles']:,} triangles, {out['median_s'] * 1e3:.2f} ms a frame",
          flush=True)
    return out

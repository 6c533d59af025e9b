"""The measurements behind the opening chapters: CPU vs GPU crossover, what a GPU is made
of, timing mistakes, and one fused operation at five levels of abstraction."""

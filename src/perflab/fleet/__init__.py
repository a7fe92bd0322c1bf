"""A benchmark fleet: many machines, one procrastinate queue and one store in PostgreSQL."""

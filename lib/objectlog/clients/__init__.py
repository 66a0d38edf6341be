"""The clients: the LogClient contract, its direct and HTTP implementations, the Producer and
the Consumer."""

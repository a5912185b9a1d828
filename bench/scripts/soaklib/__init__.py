"""The parts of bench/scripts/soak.py: processes, servers, sampling, load,
faults and the verdict."""

"""The reliability workload, its faults and its checker (`objectlog verify`)."""

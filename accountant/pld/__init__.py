"""Privacy loss distributions: grids, certified composition, schedules."""

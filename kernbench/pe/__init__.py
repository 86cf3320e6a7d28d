"""PE components: PE_CPU, PE_SCHEDULER and the engines, and their commands."""

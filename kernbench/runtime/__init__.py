"""The host side: deploy tensors, launch kernels, run and replay (``api``)."""

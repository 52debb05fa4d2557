"""ablate.sweep.launch"""

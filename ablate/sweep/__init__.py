"""ablate.sweep"""

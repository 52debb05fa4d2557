"""ablate.data"""

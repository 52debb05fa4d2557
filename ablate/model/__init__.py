"""ablate.model"""

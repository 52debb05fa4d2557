"""ablate.train"""

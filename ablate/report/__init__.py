"""ablate.report"""

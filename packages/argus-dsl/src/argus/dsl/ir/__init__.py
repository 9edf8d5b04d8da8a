"""The argus dialect, its types, passes and layout lowering."""

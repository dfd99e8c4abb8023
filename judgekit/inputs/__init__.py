"""What the user writes — criteria, calibration sets, the gate's policy and the watching settings —
read from disk and validated once, at this boundary. Nothing here calls a model."""

"""Performance you can read: the instruction trace of simulated launches (:mod:`.trace`), a timing
model replaying it per SoC (:mod:`.model`, constants in :mod:`.soc_constants`), whole-op rooflines
(:mod:`.roofline`), the traffic of the PyTorch operations around the kernels (:mod:`.torch_traffic`),
``fla-npu bench`` (:mod:`.bench`) and the calibration against measured times (:mod:`.calibrate`).
Modelled figures are labelled ``model`` wherever they appear."""

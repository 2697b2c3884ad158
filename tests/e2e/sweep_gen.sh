# Sourced by tests/e2e/sweep.sh and slurm.sh: writes the small sweep file
# $W/small.yaml (3 variants x 3 models: the fmnist CNN and two generated e2e
# models) with absolute paths, generating the models when missing.
M=$B/e2e/models
[ -f $M/conv.onnx ] && [ -f $M/residual.onnx ] || /usr/bin/python3 tests/e2e/gen_models.py $M >/dev/null || exit 1
R=$(pwd)
MA=$(cd $M && pwd)
cat > $W/small.yaml <<YAML
name: small
base: edge-v1
variants:
  - {name: base, set: {}}
  - {name: mac2x, set: {npu.mac.cols: 32}}
  - {name: bw0.5x, set: {npu.dram.mb_per_s: 2000}}
models:
  - {name: cnn, onnx: $R/examples/fmnist/fmnist_cnn.onnx, calib: $R/examples/fmnist/calib, input: $R/examples/fmnist/calib/000.npy}
  - {name: conv, onnx: $MA/conv.onnx, calib: $MA/conv_calib, input: $MA/conv_input.npy}
  - {name: residual, onnx: $MA/residual.onnx, calib: $MA/residual_calib, input: $MA/residual_input.npy}
YAML

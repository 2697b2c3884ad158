#include <criterion/criterion.h>
#include <string.h>

#include "driver/options.h"

static npu_status parse(drv_options *o, npu_err *e, const char *line)
{
    static char buf[1024];
    static char *argv[64];
    int argc = 0;
    strncpy(buf, line, sizeof buf - 1);
    argv[argc++] = "npucc";
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    return drv_parse_args(argc, argv, o, e);
}

Test(options, contract_flags_parse)
{
    drv_options o;
    npu_err e;
    cr_assert_eq(parse(&o, &e,
                       "--target edge-v1 --calib data/ -o out.npub --emit c --wbits 4 --abits 8 "
                       "--calib-method kl --report --stats-json s.json --layer-bits conv1=8 m.onnx"),
                 NPU_OK, "%s", e.msg);
    cr_assert_str_eq(o.target, "edge-v1");
    cr_assert_str_eq(o.calib_dir, "data/");
    cr_assert_str_eq(o.output, "out.npub");
    cr_assert_eq(o.emit, DRV_EMIT_C);
    cr_assert_eq(o.wbits, 4);
    cr_assert_eq(o.abits, 8);
    cr_assert_eq(o.calib_method, DRV_CALIB_KL);
    cr_assert(o.report);
    cr_assert_str_eq(o.stats_json, "s.json");
    cr_assert_eq(o.n_layer_bits, 1);
    cr_assert_str_eq(o.layer_bits[0].name, "conv1");
    cr_assert_eq(o.layer_bits[0].bits, 8);
    cr_assert_str_eq(o.model, "m.onnx");
}

Test(options, equals_form_and_defaults)
{
    drv_options o;
    npu_err e;
    cr_assert_eq(parse(&o, &e, "--target=edge-v1-lite --dump-after=all m.onnx"), NPU_OK, "%s", e.msg);
    cr_assert_str_eq(o.target, "edge-v1-lite");
    cr_assert_str_eq(o.dump_after, "all");
    cr_assert_eq(o.wbits, 8);
    cr_assert_eq(o.emit, DRV_EMIT_NPUB);
    cr_assert_null(o.output);
}

Test(options, usage_errors)
{
    static const struct {
        const char *line;
        const char *msg;
    } cases[] = {
        {"m.onnx", "--target is required"},
        {"--target edge-v1", "no model given"},
        {"--target edge-v1 --wbits 3 m.onnx", "--wbits: '3' is not 8 or 4"},
        {"--target edge-v1 --emit elf m.onnx", "--emit: 'elf'"},
        {"--target edge-v1 --calib-method best m.onnx", "--calib-method: 'best'"},
        {"--target edge-v1 --frobnicate m.onnx", "unknown option '--frobnicate'"},
        {"--target edge-v1 a.onnx b.onnx", "more than one model"},
        {"--target edge-v1 m.onnx --calib", "--calib needs a value"},
        {"--target edge-v1 --layer-bits conv1 m.onnx", "--layer-bits: 'conv1'"},
        {"--target edge-v1 --accuracy-budget -3 m.onnx", "--accuracy-budget"},
        {"--target edge-v1 --input-shape x=1xQ m.onnx", "--input-shape"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        drv_options o;
        npu_err e = {0};
        cr_assert_eq(parse(&o, &e, cases[i].line), NPU_EUSAGE, "accepted: %s", cases[i].line);
        cr_assert(strstr(e.msg, cases[i].msg), "for '%s': got '%s'", cases[i].line, e.msg);
    }
}

Test(options, validate_needs_no_model)
{
    drv_options o;
    npu_err e;
    cr_assert_eq(parse(&o, &e, "--target edge-v1 --validate"), NPU_OK, "%s", e.msg);
    cr_assert(o.validate);
}

Test(options, int4_activations_default_to_mse_calibration)
{
    drv_options o;
    npu_err e;
    cr_assert_eq(parse(&o, &e, "--target edge-v1 --calib d m.onnx"), NPU_OK, "%s", e.msg);
    cr_assert_eq(o.calib_method, DRV_CALIB_MINMAX, "8-bit activations: minmax");
    cr_assert_eq(parse(&o, &e, "--target edge-v1 --calib d --abits 4 m.onnx"), NPU_OK, "%s", e.msg);
    cr_assert_eq(o.calib_method, DRV_CALIB_MSE, "int4 activations need clipping: mse");
    cr_assert_eq(parse(&o, &e, "--target edge-v1 --calib-method minmax --abits 4 m.onnx"), NPU_OK, "%s", e.msg);
    cr_assert_eq(o.calib_method, DRV_CALIB_MINMAX, "an explicit method stays");
}

Test(options, partition_mode)
{
    drv_options o;
    npu_err e;
    cr_assert_eq(parse(&o, &e, "--target edge-v1 m.onnx"), NPU_OK, "%s", e.msg);
    cr_assert_eq(o.partition, 0, "the cost model by default");
    cr_assert_eq(parse(&o, &e, "--target edge-v1 --partition first-fit m.onnx"), NPU_OK, "%s", e.msg);
    cr_assert_eq(o.partition, 1);
    cr_assert_eq(parse(&o, &e, "--target edge-v1 --partition=host m.onnx"), NPU_OK, "%s", e.msg);
    cr_assert_eq(o.partition, 2);
    cr_assert_eq(parse(&o, &e, "--target edge-v1 --partition best m.onnx"), NPU_EUSAGE);
    cr_assert(strstr(e.msg, "--partition: 'best'"), "%s", e.msg);
}

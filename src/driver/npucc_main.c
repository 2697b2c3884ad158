/* npucc: compiles an ONNX model for an NPU target (docs/cli.md). */
#include <stdio.h>

#include "driver/compile.h"
#include "man/npucc_help.h" /* build/gen: docs/cli.md, "## npucc" */

int main(int argc, char **argv)
{
    drv_options o;
    npu_err err = {0};
    npu_status st = drv_parse_args(argc, argv, &o, &err);
    if (st == NPU_OK && o.help) {
        fputs(npucc_help, stdout);
        return 0;
    }
    if (st != NPU_OK) {
        fprintf(stderr, "npucc: %s\n", err.msg);
        drv_print_usage(stderr);
        return st;
    }
    npu_alloc_counter count;
    npu_alloc a;
    bool counting = npu_alloc_from_env(&a, &count);
    st = drv_compile_alloc(&o, stdout, a, &err);
    if (st != NPU_OK)
        fprintf(stderr, "npucc: %s\n", err.msg);
    npu_alloc_report("npucc", &count, counting);
    return st;
}

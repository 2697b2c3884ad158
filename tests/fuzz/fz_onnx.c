/* The ONNX importer on arbitrary bytes, then the optimizer on what it
 * accepts. The model path lies in a directory that does not exist, so
 * external-data references can never reach a real file. */
#include "import/import.h"
#include "opt/opt.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_alloc fa;
    npu_alloc al = fuzz_alloc_hook(&fa, 256u << 20);
    npu_err err;
    npu_err_clear(&err);
    ir_graph *g = NULL;
    npu_status st = imp_load_onnx_buffer(data, size, "/nonexistent/fuzz/model.onnx", NULL, al, &g, &err);
    fuzz_check_err(st, &err);
    if (st == NPU_OK) {
        npu_err_clear(&err);
        fuzz_check_err(opt_run(g, NULL, &err), &err);
        ir_graph_free(g);
    }
    fuzz_alloc_done(&fa);
    return 0;
}

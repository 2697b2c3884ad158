/* The graph section of a .npub alone (ref_load_graph_section: the reader and
 * the re-check of the stored graph), then the reference
 * executor on it, as npuref MODEL.npub does once the container is open. */
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_npub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_alloc fa;
    fuzz_run_graph(data, size, fuzz_alloc_hook(&fa, 256u << 20), 1);
    fuzz_alloc_done(&fa);
    return 0;
}

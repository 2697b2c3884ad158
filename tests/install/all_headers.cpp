// Every public header of the installed libnpurt, compiled as C++ with only
// the prefix's include/ on the path and linked against the host build:
// the headers are self-contained and extern "C" (tests/e2e/install.sh checks
// that each installed header is included here).
#include <npurt/npub.h>
#include <npurt/npurt.h>
#include <npurt/npurt_hal.h>
#include <npurt/npurt_model.h>
#include <npurt/npurt_ops.h>

#include <cstdio>
#include <cstring>

int main()
{
    // a blob of 64 zero bytes: npurt_open must reject it and say why
    alignas(16) static unsigned char blob[64];
    npub_view v;
    npub_error err;
    std::memset(&err, 0, sizeof err);
    int rc = npurt_open(blob, sizeof blob, &v, &err);
    std::printf("npurt_open: %d: %s\n", rc, err.msg);
    if (rc == 0 || err.msg[0] == '\0')
        return 1;
    // the model API refuses it too, with its own status
    static npurt_model m;
    if (npurt_model_open(&m, blob, sizeof blob, npurt_ops_all) != NPURT_EBLOB || !npurt_strerror(NPURT_EBLOB)[0])
        return 1;
    // a symbol of each header reached through C linkage
    return npub_dtype_bits(5) == 8 /* int8 */ && NPURT_REC_VERSION > 0 && NPURT_NPU_BASE != 0 ? 0 : 1;
}

/* npucc: compiles an ONNX model for an NPU target (see docs/cli.md). */
#include <stdio.h>

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "npucc: not implemented yet\n");
    return 3;
}

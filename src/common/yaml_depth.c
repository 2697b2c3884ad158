#include "common/yaml_depth.h"

#include <yaml.h>

npu_status npu_yaml_check_depth(const char *file, const char *text, size_t len, npu_err *err)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", file);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    npu_status st = NPU_OK;
    for (int depth = 0;;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e))
            break; /* the loader reports the syntax error */
        yaml_event_type_t t = e.type;
        if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
            if (++depth > NPU_YAML_MAX_DEPTH)
                st = npu_fail(err, NPU_EUSER, "%s:%zu:%zu: nested more than %d levels deep (NPU_YAML_MAX_DEPTH)",
                              file, e.start_mark.line + 1, e.start_mark.column + 1, NPU_YAML_MAX_DEPTH);
        } else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) {
            depth--;
        }
        yaml_event_delete(&e);
        if (st != NPU_OK || t == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&p);
    return st;
}

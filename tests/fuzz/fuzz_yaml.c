/* libFuzzer target: arbitrary bytes through the YAML reader (libyaml plus
 * PyYAML's resolution and merge rules), every mapping it yields through
 * the config validator, and the same bytes through the .env parser.
 * Nothing may crash, leak or run away: alias bombs and deep nesting must
 * end in errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/dotenv.h"
#include "config/config_yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* So that validation gets past the model name. */
    setenv("MSWEA_MODEL_NAME", "fuzz/model", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mini_err e;
    cJSON *v = mini_yaml_parse((const char *)data, size, "fuzz", &e);
    if (!v && e.msg[0] == '\0')
        abort(); /* an error must say why */
    if (cJSON_IsObject(v)) {
        cJSON *copy = cJSON_Duplicate(v, true);
        if (copy && mini_config_validate(copy, &e) == 0) {
            /* Validation is idempotent. */
            char *once = cJSON_PrintUnformatted(copy);
            if (mini_config_validate(copy, &e) < 0)
                abort();
            char *twice = cJSON_PrintUnformatted(copy);
            if (once && twice && strcmp(once, twice) != 0)
                abort();
            free(once);
            free(twice);
        }
        cJSON_Delete(copy);
    }
    cJSON_Delete(v);
    size_t skipped;
    cJSON *env = mini_config_parse_dotenv((const char *)data, size, &skipped, &e);
    cJSON_Delete(env);
    return 0;
}

#include "CPulse.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

const SpeakerdPulse *speakerd_pulse_load(const char *library, char *error, size_t error_size) {
    /* RTLD_LOCAL: libpulse's own dependencies stay out of the process's global namespace. */
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *reason = dlerror();
        snprintf(error, error_size, "%s", reason != NULL ? reason : library);
        return NULL;
    }
    SpeakerdPulse *table = malloc(sizeof *table);
    if (table == NULL) {
        snprintf(error, error_size, "out of memory loading %s", library);
        dlclose(handle);
        return NULL;
    }
#define SPEAKERD_PULSE_RESOLVE(name) \
    table->name = (__typeof__(name) *)dlsym(handle, #name); \
    if (table->name == NULL) { \
        snprintf(error, error_size, "%s has no function %s", library, #name); \
        free(table); \
        dlclose(handle); \
        return NULL; \
    }
    SPEAKERD_PULSE_FUNCTIONS(SPEAKERD_PULSE_RESOLVE)
#undef SPEAKERD_PULSE_RESOLVE
    return table;
}

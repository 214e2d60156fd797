#include "CFluidSynth.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

const SpeakerdFluidSynth *speakerd_fluidsynth_load(const char *library, char *error, size_t error_size) {
    /* RTLD_LOCAL: FluidSynth's own dependencies stay out of the process's global namespace. */
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *reason = dlerror();
        snprintf(error, error_size, "%s", reason != NULL ? reason : library);
        return NULL;
    }
    SpeakerdFluidSynth *table = malloc(sizeof *table);
    if (table == NULL) {
        snprintf(error, error_size, "out of memory loading %s", library);
        dlclose(handle);
        return NULL;
    }
#define SPEAKERD_FLUIDSYNTH_RESOLVE(name) \
    table->name = (__typeof__(name) *)dlsym(handle, #name); \
    if (table->name == NULL) { \
        snprintf(error, error_size, "%s has no function %s; FluidSynth 2 is needed", library, #name); \
        free(table); \
        dlclose(handle); \
        return NULL; \
    }
    SPEAKERD_FLUIDSYNTH_FUNCTIONS(SPEAKERD_FLUIDSYNTH_RESOLVE)
#undef SPEAKERD_FLUIDSYNTH_RESOLVE
    return table;
}

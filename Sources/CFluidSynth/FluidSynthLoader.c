#include "CFluidSynth.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* libasound's error handler type (alsa/error.h), declared here so no ALSA header is needed. */
typedef void (*speakerd_snd_lib_error_handler_t)(const char *file, int line, const char *function, int err,
                                                 const char *fmt, ...);

static pthread_mutex_t alsa_error_lock = PTHREAD_MUTEX_INITIALIZER;
static char alsa_error[256];
static int alsa_error_held = 0;

static void speakerd_alsa_error_handler(const char *file, int line, const char *function, int err,
                                        const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err;
    pthread_mutex_lock(&alsa_error_lock);
    if (!alsa_error_held) {
        va_list arguments;
        va_start(arguments, fmt);
        vsnprintf(alsa_error, sizeof alsa_error, fmt, arguments);
        va_end(arguments);
        alsa_error_held = 1;
    }
    pthread_mutex_unlock(&alsa_error_lock);
}

void speakerd_alsa_capture_errors(void) {
    /* RTLD_NOLOAD: only the libasound FluidSynth already pulled in; speakerd never loads it itself. */
    void *handle = dlopen("libasound.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL) return;
    int (*set_handler)(speakerd_snd_lib_error_handler_t) =
        (int (*)(speakerd_snd_lib_error_handler_t))dlsym(handle, "snd_lib_error_set_handler");
    if (set_handler != NULL) set_handler(speakerd_alsa_error_handler);
    /* The library stays loaded (FluidSynth holds it), so the handle may go. */
    dlclose(handle);
}

int speakerd_alsa_take_error(char *message, size_t size) {
    pthread_mutex_lock(&alsa_error_lock);
    int held = alsa_error_held;
    if (held && size > 0) snprintf(message, size, "%s", alsa_error);
    alsa_error_held = 0;
    pthread_mutex_unlock(&alsa_error_lock);
    return held;
}

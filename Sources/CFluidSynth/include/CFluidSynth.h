#ifndef SPEAKERD_CFLUIDSYNTH_H
#define SPEAKERD_CFLUIDSYNTH_H

/* FluidSynth, opened with dlopen on first use instead of linked.
 *
 * Why: libfluidsynth pulls about 80 shared libraries (PulseAudio, JACK, SDL2, X11, glib) into
 * any process linked with it, and speakerd would pay for loading them at every start (see
 * docs/BENCHMARKS.md, "Start-up"), although it needs FluidSynth only once it preloads the
 * soundfont or plays.
 *
 * fluidsynth.h is included for its types and constants only. Its functions are declared but
 * not linked: call them through the table `speakerd_fluidsynth_load()` returns. The table's
 * field types are taken from those declarations, so the compiler checks every prototype.
 */
#include <fluidsynth.h>

/* The FluidSynth functions speakerd calls; each field is named after its function. */
#define SPEAKERD_FLUIDSYNTH_FUNCTIONS(X) \
    X(new_fluid_settings) \
    X(delete_fluid_settings) \
    X(fluid_settings_setint) \
    X(fluid_settings_setnum) \
    X(fluid_settings_setstr) \
    X(fluid_settings_getint) \
    X(new_fluid_synth) \
    X(delete_fluid_synth) \
    X(fluid_synth_sfload) \
    X(fluid_synth_get_sfont_by_id) \
    X(fluid_synth_add_sfont) \
    X(fluid_synth_remove_sfont) \
    X(fluid_is_soundfont) \
    X(fluid_synth_all_notes_off) \
    X(fluid_synth_all_sounds_off) \
    X(fluid_synth_system_reset) \
    X(fluid_synth_noteon) \
    X(fluid_synth_noteoff) \
    X(fluid_synth_key_pressure) \
    X(fluid_synth_cc) \
    X(fluid_synth_program_change) \
    X(fluid_synth_channel_pressure) \
    X(fluid_synth_pitch_bend) \
    X(fluid_synth_sysex) \
    X(fluid_synth_write_s16) \
    X(fluid_synth_write_float) \
    X(new_fluid_audio_driver2) \
    X(delete_fluid_audio_driver) \
    X(fluid_set_log_function)

#define SPEAKERD_FLUIDSYNTH_FIELD(name) __typeof__(name) *_Nonnull name;

/* Entry points of the loaded library. */
typedef struct SpeakerdFluidSynth {
    SPEAKERD_FLUIDSYNTH_FUNCTIONS(SPEAKERD_FLUIDSYNTH_FIELD)
} SpeakerdFluidSynth;

#undef SPEAKERD_FLUIDSYNTH_FIELD

/* Opens `library` (a soname or a path) and resolves every function above: the table, which lives
 * as long as the process (the library is never closed), or NULL with one line in `error` saying
 * why (the loader's message, or the missing function). Swift keeps the first table it gets. */
const SpeakerdFluidSynth *_Nullable speakerd_fluidsynth_load(const char *_Nonnull library,
                                                             char *_Nonnull error, size_t error_size);

/* Turns libasound's own error printing (`ALSA lib pcm.c:2666:(snd_pcm_open_noupdate) Unknown PCM
 * x`, written straight to stderr, several lines per failed open) off for the whole process, once
 * FluidSynth has loaded libasound: its messages are kept instead, the first since the last
 * `speakerd_alsa_take_error`, for the one line speakerd writes about a device that could not be
 * opened. Does nothing where libasound is not loaded. */
void speakerd_alsa_capture_errors(void);

/* The first libasound message since the last call (copied into `message`, without the
 * `ALSA lib file:line:(function)` prefix): 1, or 0 when there was none. */
int speakerd_alsa_take_error(char *_Nonnull message, size_t size);

#endif

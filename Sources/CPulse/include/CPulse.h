#ifndef SPEAKERD_CPULSE_H
#define SPEAKERD_CPULSE_H

/* libpulse, opened with dlopen on first use instead of linked, as FluidSynth is (CFluidSynth.h).
 *
 * Why: libpulse pulls about 20 shared libraries (libpulsecommon, libsndfile and its codecs, X11,
 * xcb) into any process linked with it, and speakerd would pay for loading them at every start
 * (docs/BENCHMARKS.md, "Start-up") although only `audio_output = pulseaudio` needs it.
 *
 * The pulse headers (libpulse-dev) are included for their types and constants only. Call the
 * functions through the table `speakerd_pulse_load()` returns; its field types are taken from
 * the headers' declarations, so the compiler checks every prototype.
 */
#include <stddef.h>
#include <pulse/context.h>
#include <pulse/error.h>
#include <pulse/introspect.h>
#include <pulse/proplist.h>
#include <pulse/stream.h>
#include <pulse/subscribe.h>
#include <pulse/thread-mainloop.h>
#include <pulse/volume.h>

/* The libpulse functions speakerd calls; each field is named after its function. */
#define SPEAKERD_PULSE_FUNCTIONS(X) \
    X(pa_threaded_mainloop_new) \
    X(pa_threaded_mainloop_get_api) \
    X(pa_threaded_mainloop_start) \
    X(pa_threaded_mainloop_stop) \
    X(pa_threaded_mainloop_free) \
    X(pa_threaded_mainloop_lock) \
    X(pa_threaded_mainloop_unlock) \
    X(pa_context_new) \
    X(pa_context_set_state_callback) \
    X(pa_context_set_subscribe_callback) \
    X(pa_context_connect) \
    X(pa_context_disconnect) \
    X(pa_context_unref) \
    X(pa_context_get_state) \
    X(pa_context_errno) \
    X(pa_context_subscribe) \
    X(pa_context_get_card_info_list) \
    X(pa_context_get_sink_info_list) \
    X(pa_context_get_sink_info_by_name) \
    X(pa_context_set_sink_volume_by_name) \
    X(pa_context_set_card_profile_by_index) \
    X(pa_cvolume_set) \
    X(pa_cvolume_max) \
    X(pa_operation_unref) \
    X(pa_strerror) \
    X(pa_proplist_iterate) \
    X(pa_proplist_gets) \
    X(pa_proplist_new) \
    X(pa_proplist_sets) \
    X(pa_proplist_free) \
    X(pa_stream_new_with_proplist) \
    X(pa_stream_set_state_callback) \
    X(pa_stream_set_write_callback) \
    X(pa_stream_connect_playback) \
    X(pa_stream_get_state) \
    X(pa_stream_begin_write) \
    X(pa_stream_write) \
    X(pa_stream_get_latency) \
    X(pa_stream_set_underflow_callback) \
    X(pa_stream_get_underflow_index) \
    X(pa_stream_set_buffer_attr) \
    X(pa_stream_get_buffer_attr) \
    X(pa_stream_disconnect) \
    X(pa_stream_unref)

#define SPEAKERD_PULSE_FIELD(name) __typeof__(name) *_Nonnull name;

/* Entry points of the loaded library. */
typedef struct SpeakerdPulse {
    SPEAKERD_PULSE_FUNCTIONS(SPEAKERD_PULSE_FIELD)
} SpeakerdPulse;

#undef SPEAKERD_PULSE_FIELD

/* Opens `library` (a soname or a path) and resolves every function above: the table, which lives
 * as long as the process (the library is never closed), or NULL with one line in `error` saying
 * why (the loader's message, or the missing function). */
const SpeakerdPulse *_Nullable speakerd_pulse_load(const char *_Nonnull library, char *_Nonnull error, size_t error_size);

#endif

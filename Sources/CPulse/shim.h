// The parts of libpulse speakerd uses: a context on a threaded main loop, sink and card
// introspection, and the subscription to their changes (speakerd's own audio goes through
// FluidSynth's pulseaudio driver, which loads libpulse by itself).
#include <pulse/context.h>
#include <pulse/error.h>
#include <pulse/introspect.h>
#include <pulse/proplist.h>
#include <pulse/subscribe.h>
#include <pulse/thread-mainloop.h>

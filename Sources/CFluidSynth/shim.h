#ifndef SPEAKERD_CFLUIDSYNTH_SHIM_H
#define SPEAKERD_CFLUIDSYNTH_SHIM_H
#include <fluidsynth.h>
#endif

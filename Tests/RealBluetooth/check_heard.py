#!/usr/bin/python3
"""Was the song heard at the speaker? Compares the speaker's recording (decoded SBC) with what
speakerd rendered for the same song (`composer-cli render`), by its notes: where each begins
(onsets), its pitch, and how long the song sounds in all. Never by loudness: PipeWire plays at
40 % and SBC is lossy, so both signals are normalised first.

The recording may hold pauses (the speaker went and came back): silence in it is left out of
the sounding time, and the notes are matched in order, so a note repeated or cut where the song
resumed is forgiven, but a note missing or out of tune is not (one missing at most, where a
pause cut it).

An onset at the pitch of the note before it is that note struck again, not a note of its own:
a gap in it (a sound server that ran out of audio, a guest too starved to send it) or a resume
going back to the last note played out. Those are counted and said apart, and more of them than
the song has notes fail the check (gaps all through it). "Notes that are not in the song" are
onsets at a new pitch beyond the song's notes: the song heard twice, or noise.

usage: check_heard.py REFERENCE.wav HEARD.wav      prints one line; exits 1 when not heard
Its own scenarios: Tests/RealBluetooth/test_check_heard.py (scripts/test runs them).
"""
import sys
import wave

import numpy as np

FRAME = 0.010          # envelope resolution, seconds
SOUNDING = 0.08        # a frame sounds above this fraction of the loudest frame
ONSET_RISE = 2.5       # a note begins where the envelope jumps by this factor within 30 ms
PITCH_TOLERANCE = 0.03 # a semitone is 6 %: half of it


def load(path: str) -> tuple[np.ndarray, int]:
    with wave.open(path, 'rb') as w:
        rate, channels = w.getframerate(), w.getnchannels()
        data = np.frombuffer(w.readframes(w.getnframes()), dtype='<i2').astype(np.float64)
    if channels > 1:
        data = data.reshape(-1, channels).mean(axis=1)
    return data, rate


def envelope(signal: np.ndarray, rate: int) -> np.ndarray:
    hop = int(rate * FRAME)
    frames = len(signal) // hop
    if frames == 0:
        return np.zeros(0)
    rms = np.sqrt((signal[:frames * hop].reshape(frames, hop) ** 2).mean(axis=1))
    peak = rms.max()
    return rms / peak if peak > 0 else rms


def notes(signal: np.ndarray, rate: int) -> list[tuple[float, float]]:
    """(onset time, pitch in Hz) for every note begun."""
    env = np.concatenate([np.zeros(3), envelope(signal, rate)])  # a note at the very start begins too
    found, last = [], -1.0
    for i in range(3, len(env)):
        t = (i - 3) * FRAME
        if env[i] > SOUNDING and env[i] > ONSET_RISE * max(env[i - 3], 1e-3) and t - last > 0.15:
            last = t
            found.append((t, pitch(signal, rate, t + 0.03)))
    return found


def pitch(signal: np.ndarray, rate: int, start: float) -> float:
    window = signal[int(start * rate):int((start + 0.12) * rate)]
    if len(window) < 256:
        return 0.0
    spectrum = np.abs(np.fft.rfft(window * np.hanning(len(window)), n=1 << 16))
    freqs = np.fft.rfftfreq(1 << 16, 1 / rate)
    band = (freqs > 150) & (freqs < 2500)
    return float(freqs[band][np.argmax(spectrum[band])])


def sounding_seconds(signal: np.ndarray, rate: int) -> float:
    return float((envelope(signal, rate) > SOUNDING).sum() * FRAME)


def same_pitch(a: float, b: float) -> bool:
    return a > 0 and b > 0 and abs(a - b) / b < PITCH_TOLERANCE


def struck(onsets: list[tuple[float, float]]) -> tuple[list[tuple[float, float]], int]:
    """The notes among `onsets`, and how many onsets struck the note before them again (at its
    pitch): those are not notes of their own."""
    found, again = [], 0
    for onset in onsets:
        if found and same_pitch(onset[1], found[-1][1]):
            again += 1
        else:
            found.append(onset)
    return found, again


def main() -> int:
    reference, ref_rate = load(sys.argv[1])
    heard, heard_rate = load(sys.argv[2])
    if len(heard) == 0 or not np.any(heard):
        print('heard nothing')
        return 1
    onsets = notes(heard, heard_rate)
    (want, _), (got, again) = struck(notes(reference, ref_rate)), struck(onsets)
    # Match the reference's notes in order against the heard ones.
    matched, j = 0, 0
    for _, p in want:
        k = j
        while k < len(got) and not same_pitch(got[k][1], p):
            k += 1
        if k < len(got):
            matched, j = matched + 1, k + 1
    want_s, got_s = sounding_seconds(reference, ref_rate), sounding_seconds(heard, heard_rate)
    summary = (f'{matched}/{len(want)} notes in order at pitch ({len(onsets)} onsets heard'
               + (f', {again} of them a note struck again' if again else '') + '), '
               f'sounding {got_s:.2f} s of {want_s:.2f} s, at {heard_rate} Hz')
    problems = []
    if matched < len(want) - 1:
        problems.append('notes missing or out of tune: heard '
                        + ' '.join(f'{p:.0f}' for _, p in got) + ' Hz; want '
                        + ' '.join(f'{p:.0f}' for _, p in want) + ' Hz')
    # Two at most: a resume that goes back across a note's start strikes the note before again
    # at a new pitch, and one burst of noise. (Three were allowed while notes struck again
    # counted here too.)
    if len(got) > len(want) + 2:
        problems.append('notes that are not in the song')
    if again > len(want):
        problems.append('more notes struck again than the song has notes (gaps all through it)')
    # The lower bound is loose on purpose: on a guest starved of CPU (TCG on a busy host) the
    # sending side falls behind and BlueALSA gives the speaker up to a third less of the song's
    # time, every note still there but shortened. A song cut off (a resume that fails) loses
    # its notes, which the check above catches; this one catches a song heard twice or stuck.
    if not 0.6 * want_s <= got_s <= 1.2 * want_s + 0.3:
        problems.append('the song sounded for the wrong time')
    print(summary + ('' if not problems else ': ' + '; '.join(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())

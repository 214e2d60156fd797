#!/usr/bin/python3
"""Scenarios for check_heard.py, the judge of every real-Bluetooth scenario: what a speaker's
recording must be for the song to count as heard, on synthetic songs (no guest needed).

usage: test_check_heard.py      prints a line per scenario; exits 1 if any went wrong
"""
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

RATE = 48000
HERE = os.path.dirname(os.path.abspath(__file__))
PITCHES = [392.0, 440.0, 494.0, 523.3, 587.3, 659.3, 698.5, 784.0]
BEAT, SOUNDING = 0.6, 0.45


def note(frequency: float) -> np.ndarray:
    """A plucked tone: a few harmonics, struck at once and fading, then silence to the beat."""
    t = np.arange(int(BEAT * RATE)) / RATE
    tone = sum(np.sin(2 * np.pi * frequency * k * t) / k for k in (1, 2, 3))
    fade = np.exp(-t * 3.0) * (t < SOUNDING)
    return tone * fade


def song(pitches: list[float]) -> np.ndarray:
    return np.concatenate([note(p) for p in pitches] + [np.zeros(RATE // 2)])


def gap(signal: np.ndarray, at: float, seconds: float = 0.03) -> np.ndarray:
    """The sound gone for a moment at `at` (a sound server that ran out of audio)."""
    out = signal.copy()
    out[int(at * RATE):int((at + seconds) * RATE)] = 0
    return out


def write(path: str, signal: np.ndarray, gain: float = 0.3) -> str:
    samples = np.clip(signal / np.abs(signal).max() * gain * 32767, -32768, 32767).astype('<i2')
    with wave.open(path, 'wb') as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(samples.tobytes())
    return path


def judge(folder: str, reference: str, heard: np.ndarray) -> tuple[int, str]:
    recording = write(os.path.join(folder, 'heard.wav'), heard)
    run = subprocess.run([sys.executable, os.path.join(HERE, 'check_heard.py'), reference, recording],
                         capture_output=True, text=True, check=False)
    return run.returncode, run.stdout.strip()


def main() -> int:
    whole = song(PITCHES)
    # Each: what the speaker heard, whether it counts as heard, and words the verdict must hold.
    scenarios = [
        ('the song as rendered, quieter (a sound server at 40 %)', whole, True, ['8/8 notes', '(8 onsets heard)']),
        ('two short gaps inside notes: heard, the two notes struck again said apart',
         gap(gap(whole, 1 * BEAT + 0.2), 5 * BEAT + 0.25), True, ['8/8 notes', '10 onsets heard, 2 of them a note struck again']),
        ('a resume that goes back to the note the speaker lost: heard',
         np.concatenate([whole[:int(3.3 * RATE)], np.zeros(RATE), whole[int(3.0 * RATE):]]), True, ['8/8 notes', '1 of them a note struck again']),
        ('gaps all through it (two in every note): not heard',
         gap_every_note(whole), False, ['more notes struck again than the song has notes']),
        ('the song heard twice: not heard', np.concatenate([whole, whole]), False, ['notes that are not in the song']),
        ('two notes never sounded: not heard', silence_notes(whole, [3, 4]), False, ['notes missing or out of tune']),
        ('the song a semitone sharp: not heard', song([p * 2 ** (1 / 12) for p in PITCHES]), False, ['notes missing or out of tune']),
    ]
    failures = 0
    with tempfile.TemporaryDirectory() as folder:
        reference = write(os.path.join(folder, 'reference.wav'), whole, gain=0.8)
        for name, heard, counts, words in scenarios:
            status, verdict = judge(folder, reference, heard)
            wrong = []
            if (status == 0) != counts:
                wrong.append(f'exit {status}')
            wrong += [f'no "{w}"' for w in words if w not in verdict]
            failures += bool(wrong)
            print(f'{"ok  " if not wrong else "FAIL"} {name}: {verdict}' + (f' ({", ".join(wrong)})' if wrong else ''))
    print(f'test_check_heard: {len(scenarios) - failures} passed, {failures} failed')
    return 1 if failures else 0


def gap_every_note(signal: np.ndarray) -> np.ndarray:
    out = signal
    for i in range(len(PITCHES)):
        out = gap(gap(out, i * BEAT + 0.12), i * BEAT + 0.27)
    return out


def silence_notes(signal: np.ndarray, which: list[int]) -> np.ndarray:
    out = signal.copy()
    for i in which:
        out[int(i * BEAT * RATE):int((i + 1) * BEAT * RATE)] = 0
    return out


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""Writes the real-Bluetooth scenarios' songs as MIDI files: one piano line of distinct pitches,
each note clearly begun and ended, so that the speaker's recording can be checked note by note
(pitch, onsets, duration) against speakerd's own rendering.

  short.mid  six notes, about 3 s: the scenarios that only need the song heard
  long.mid   sixteen notes, about 10 s: the ones that disturb the song while it plays

usage: songs.py DIR
"""
import struct
import sys

SHORT = [72, 76, 79, 84, 79, 76]                                   # C5 E5 G5 C6 G5 E5
LONG = [67, 69, 71, 72, 74, 76, 77, 79, 81, 79, 77, 76, 74, 72, 71, 69]


def varlen(n: int) -> bytes:
    out = [n & 0x7F]
    while n > 127:
        n >>= 7
        out.insert(0, (n & 0x7F) | 0x80)
    return bytes(out)


def song(notes: list[int], beat_ticks: int, sounding_ticks: int) -> bytes:
    """Format 0, 480 ticks a quarter at 120 bpm (a quarter is 0.5 s), piano on channel 0."""
    events = b'\x00\xff\x51\x03' + (500000).to_bytes(3, 'big') + b'\x00\xc0\x00'
    for note in notes:
        events += b'\x00' + bytes([0x90, note, 100])
        events += varlen(sounding_ticks) + bytes([0x80, note, 0])
        events += varlen(beat_ticks - sounding_ticks) + b'\xff\x01\x00'  # a rest, as an empty text event
    events += b'\x00\xff\x2f\x00'
    return (b'MThd' + struct.pack('>IHHH', 6, 0, 1, 480)
            + b'MTrk' + struct.pack('>I', len(events)) + events)


def main() -> None:
    folder = sys.argv[1]
    with open(f'{folder}/short.mid', 'wb') as f:
        f.write(song(SHORT, 480, 360))
    with open(f'{folder}/long.mid', 'wb') as f:
        f.write(song(LONG, 576, 432))


if __name__ == '__main__':
    main()

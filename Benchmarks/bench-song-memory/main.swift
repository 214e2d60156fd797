import Foundation
import Glibc
import MIDI
import Playback

// bench-song-memory: what a parsed song costs in memory, packed (as speakerd keeps it) beside the
// unpacked forms it replaced, measured on the heap in one run (docs/BENCHMARKS.md, issue 25).
//   swift build -c release --product bench-song-memory && .build/release/bench-song-memory [EVENTS] [RUNS]
//
// The song is the reliability suite's queue-flood song in small: a format-0 file of note events of
// 4 bytes each (delta 1, status, key, velocity), with a tempo change halfway. The arranged rows
// play it with `--tempo 90% --loop` (its middle half) `--loop-count 3 --count-in 2 --transpose 2`,
// as a queued song holds it: the written song, which the live controls arrange again from, and
// the arranged one.

let arguments = CommandLine.arguments
let eventCount = arguments.count > 1 ? Int(arguments[1]) ?? 1_000_000 : 1_000_000
let runs = arguments.count > 2 ? Int(arguments[2]) ?? 5 : 5

func be32(_ value: Int) -> [UInt8] { [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
func tempo(_ microseconds: Int) -> [UInt8] { [0x00, 0xFF, 0x51, 0x03, UInt8(microseconds >> 16), UInt8(microseconds >> 8 & 0xFF), UInt8(microseconds & 0xFF)] }

var body = tempo(500_000)
body.reserveCapacity(eventCount * 4 + 64)
for index in 0..<eventCount {
    let on = index % 2 == 0
    // Each note released on the key it struck, as the reliability suite's song does (the file's size
    // and the packed song's are the same either way; an arrangement drops a note-off whose note
    // was never struck, and releases every note still held at a loop's seam).
    body += [0x01, on ? 0x90 : 0x80, UInt8(48 + index / 2 % 24), on ? 0x64 : 0x00]
    if index == eventCount / 2 { body += tempo(400_000) }
}
body += [0x00, 0xFF, 0x2F, 0x00]
let file: [UInt8] = Array("MThd".utf8) + be32(6) + [0, 0, 0, 1, 0x01, 0xE0] + Array("MTrk".utf8) + be32(body.count) + body
body = []

/// Bytes in use on the heap now (glibc's allocator: every arena's system memory less its free
/// chunks, plus mmapped blocks), read from `malloc_info`'s XML: Swift's Glibc module leaves out
/// <malloc.h>, so the function is looked up by name, and its one struct-free signature suits that.
func heapInUse() -> Int {
    typealias MallocInfo = @convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32
    guard let symbol = dlsym(nil /* RTLD_DEFAULT */, "malloc_info") else {
        fatalError("bench-song-memory: no malloc_info in this C library")
    }
    let mallocInfo = unsafeBitCast(symbol, to: MallocInfo.self)
    var buffer: UnsafeMutablePointer<CChar>?
    var size = 0
    guard let stream = open_memstream(&buffer, &size) else { fatalError("bench-song-memory: open_memstream failed") }
    _ = mallocInfo(0, stream)
    fclose(stream)
    defer { free(buffer) }
    let xml = String(cString: buffer!)
    // The totals over all arenas are the last elements of the document, after every <heap>.
    let totals = xml[xml.range(of: "</heap>", options: .backwards)!.upperBound...]
    func value(_ element: String) -> Int {
        guard let range = totals.range(of: element) else { fatalError("bench-song-memory: no \(element) in malloc_info") }
        let rest = totals[range.upperBound...]
        let quoted = rest.drop { $0 != "\"" }.dropFirst().prefix { $0 != "\"" }
        return Int(quoted) ?? 0
    }
    let system = value("<system type=\"current\" size=")
    let fast = fieldAfterCount(totals, "fast")
    let rest = fieldAfterCount(totals, "rest")
    let mmapped = fieldAfterCount(totals, "mmap")
    return system - fast - rest + mmapped
}

/// The size= of `<total type="KIND" count="…" size="…"/>`.
func fieldAfterCount(_ xml: Substring, _ kind: String) -> Int {
    guard let range = xml.range(of: "<total type=\"\(kind)\"") else { return 0 }
    let element = xml[range.upperBound...].prefix { $0 != "/" }
    guard let size = element.range(of: "size=\"") else { return 0 }
    return Int(element[size.upperBound...].prefix { $0 != "\"" }) ?? 0
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

func clockSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

var packedBytes: [Double] = [], unpackedBytes: [Double] = [], schedulerCopyBytes: [Double] = []
var packedWalk: [Double] = [], unpackedWalk: [Double] = [], parseTimes: [Double] = []
var arrangedBytes: [Double] = [], arrangedBeforeBytes: [Double] = [], arrangeTimes: [Double] = []
var arrangedWalk: [Double] = [], arrangedBeforeWalk: [Double] = []
var arrangedCount = 0
var checksum = 0.0
for _ in 0..<runs {
    // The song as the reader returns it now: packed, ticks under the tempo map.
    var before = heapInUse()
    var started = clockSeconds()
    let song = try MIDIFileReader.read(file, limits: MIDIReadLimits(maxEvents: eventCount + 16))
    parseTimes.append(clockSeconds() - started)
    packedBytes.append(Double(heapInUse() - before))

    // The same events with a Double of seconds each: how the reader kept them before.
    before = heapInUse()
    let unpacked = Array(song.events)
    unpackedBytes.append(Double(heapInUse() - before))

    // The copy the scheduler made of a playing song before (a frame and a message per event); it
    // now reads the song's own packed events.
    before = heapInUse()
    var copy = ContiguousArray<(frame: Int, message: MIDIMessage)>()
    copy.reserveCapacity(unpacked.count)
    for event in unpacked { copy.append((Int((event.seconds * 48_000).rounded()), event.message)) }
    schedulerCopyBytes.append(Double(heapInUse() - before))

    // What the render thread does per event: its seconds and its message, in order.
    started = clockSeconds()
    for index in song.events.indices {
        checksum += song.events.seconds(at: index)
        if case .noteOn = song.events.message(at: index) { checksum += 1 }
    }
    packedWalk.append(clockSeconds() - started)
    started = clockSeconds()
    for event in unpacked {
        checksum += event.seconds
        if case .noteOn = event.message { checksum += 1 }
    }
    unpackedWalk.append(clockSeconds() - started)
    withExtendedLifetime((unpacked, copy)) {}

    // The arranged song beside the written one: a view of its events (now).
    let duration = song.durationSeconds
    let arrangement = SongArrangement(loop: LoopSection(start: .seconds(duration / 4), end: .seconds(duration * 3 / 4)),
                                      loopPasses: 3, tempo: .percent(90), transpose: 2, countInBars: 2)
    let arrangeLimits = MIDIReadLimits(maxEvents: 2 * eventCount + 1000, maxDurationSeconds: 1e7)
    before = heapInUse()
    started = clockSeconds()
    let arranged = try arrangement.arrange(song, limits: arrangeLimits)
    arrangeTimes.append(clockSeconds() - started)
    arrangedBytes.append(Double(heapInUse() - before))
    arrangedCount = arranged.events.count

    // The same arranged events with a Double each, as the arrangement laid them before.
    before = heapInUse()
    let arrangedBefore = MIDIEventList(arranged.events)
    arrangedBeforeBytes.append(Double(heapInUse() - before))

    started = clockSeconds()
    for index in arranged.events.indices {
        checksum += arranged.events.seconds(at: index)
        if case .noteOn = arranged.events.message(at: index) { checksum += 1 }
    }
    arrangedWalk.append(clockSeconds() - started)
    started = clockSeconds()
    for index in arrangedBefore.indices {
        checksum += arrangedBefore.seconds(at: index)
        if case .noteOn = arrangedBefore.message(at: index) { checksum += 1 }
    }
    arrangedBeforeWalk.append(clockSeconds() - started)
    withExtendedLifetime((song, arranged, arrangedBefore)) {}
}

let fileBytes = Double(file.count)
func perEvent(_ bytes: Double) -> String { String(format: "%.1f", bytes / Double(eventCount)) }
func ratio(_ bytes: Double) -> String { String(format: "%.2f×", bytes / fileBytes) }
print("bench-song-memory: \(eventCount) note events, file \(file.count) bytes, median of \(runs) runs (checksum \(Int(checksum) % 10))")
print("| form | bytes per event | whole song | of its file |")
print("| --- | --- | --- | --- |")
print("| parsed song, packed (now) | \(perEvent(median(packedBytes))) | \(String(format: "%.1f", median(packedBytes) / 1_048_576)) MiB | \(ratio(median(packedBytes))) |")
print("| the same events unpacked, [MIDITimedEvent] (before) | \(perEvent(median(unpackedBytes))) | \(String(format: "%.1f", median(unpackedBytes) / 1_048_576)) MiB | \(ratio(median(unpackedBytes))) |")
print("| the scheduler's copy while it plays (before; none now) | \(perEvent(median(schedulerCopyBytes))) | \(String(format: "%.1f", median(schedulerCopyBytes) / 1_048_576)) MiB | \(ratio(median(schedulerCopyBytes))) |")
print("")
print("| per-event work | packed | unpacked | ratio |")
print("| --- | --- | --- | --- |")
print("| read seconds + message of every event | \(String(format: "%.1f", median(packedWalk) / Double(eventCount) * 1e9)) ns | \(String(format: "%.1f", median(unpackedWalk) / Double(eventCount) * 1e9)) ns | \(String(format: "%.2f", median(packedWalk) / median(unpackedWalk))) |")
print("| parse the file (packed) | \(String(format: "%.0f", median(parseTimes) * 1000)) ms | | |")
print("")
let written = median(packedBytes)
func mib(_ bytes: Double) -> String { String(format: "%.1f MiB", bytes / 1_048_576) }
let arrangedEvents = Double(arrangedCount)
func perArranged(_ bytes: Double) -> String { String(format: "%.2f", bytes / arrangedEvents) }
print("arranged: --tempo 90% --loop (middle half) --loop-count 3 --count-in 2 --transpose 2: \(arrangedCount) events")
print("| arranged song | its own bytes per event | its own bytes | with the written song | of its file |")
print("| --- | --- | --- | --- | --- |")
print("| none: the song played as written (a parsed song, above) | | | \(mib(written)) | \(ratio(written)) |")
print("| a view of the written song's events (now) | \(perArranged(median(arrangedBytes))) | \(String(format: "%.0f", median(arrangedBytes))) B | \(mib(written + median(arrangedBytes))) | \(ratio(written + median(arrangedBytes))) |")
print("| 6 bytes and a Double an event (before) | \(perArranged(median(arrangedBeforeBytes))) | \(mib(median(arrangedBeforeBytes))) | \(mib(written + median(arrangedBeforeBytes))) | \(ratio(written + median(arrangedBeforeBytes))) |")
print("")
print("| per arranged event | view | a Double an event | ratio |")
print("| --- | --- | --- | --- |")
print("| read seconds + message of every event | \(String(format: "%.1f", median(arrangedWalk) / Double(arrangedCount) * 1e9)) ns | \(String(format: "%.1f", median(arrangedBeforeWalk) / Double(arrangedCount) * 1e9)) ns | \(String(format: "%.2f", median(arrangedWalk) / median(arrangedBeforeWalk))) |")
print("| arrange the song (lay out the view) | \(String(format: "%.0f", median(arrangeTimes) * 1000)) ms | | |")

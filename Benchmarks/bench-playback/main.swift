import Foundation
import MIDI
import Playback
import Daemon

// bench-playback: the Playback figures of docs/BENCHMARKS.md, side by side in one run.
//   swift build -c release --product bench-playback && .build/release/bench-playback [RUNS]
// `bench-playback rss-probe with|without` is the child process used for the RSS figures.

let arguments = CommandLine.arguments
let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/corpus/jazz-soft-midi").path
let fluidsynth = "/usr/bin/fluidsynth"

if arguments.count == 3, arguments[1] == "rss-probe" {
    // A child process: report RSS after building an engine, with or without the SoundFont.
    if arguments[2] == "with" {
        let font = try await SoundFont.load()
        let engine = PlaybackSession(output: NullOutput(pacing: .offline), soundFont: font)
        _ = await engine.state
    } else {
        let engine = PlaybackSession(output: NullOutput(pacing: .offline)) { try await SoundFont.load() }
        _ = await engine.state
    }
    print(Measure.residentKiB())
    exit(0)
}

let runs = arguments.count > 1 ? Int(arguments[1]) ?? 7 : 7
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("bench-playback-\(getpid())")
try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: scratch) }
func path(_ name: String) -> String { "\(corpus)/\(name)" }

// MARK: - Play request → first audio frame

let shortSong = "test-c-major-scale.mid"
let font = try await SoundFont.load()
var warmFirstFrame: [Double] = []
var coldInProcess: [Double] = []
var coldFluidSynth: [Double] = []
for _ in 0..<runs {
    let probe = FirstFrameProbe()
    let engine = PlaybackSession(output: probe, soundFont: font)
    let start = ContinuousClock.now
    let song = try MIDIFileReader.read(contentsOfFile: path(shortSong))
    try await engine.start(song, title: shortSong)
    warmFirstFrame.append(Measure.seconds(try await probe.firstFrameInstant() - start))

    let coldProbe = FirstFrameProbe()
    let coldStart = ContinuousClock.now
    let coldFont = try await SoundFont.load()
    let coldEngine = PlaybackSession(output: coldProbe, soundFont: coldFont)
    try await coldEngine.start(try MIDIFileReader.read(contentsOfFile: path(shortSong)), title: shortSong)
    coldInProcess.append(Measure.seconds(try await coldProbe.firstFrameInstant() - coldStart))

    let out = scratch.appendingPathComponent("cold.wav").path
    coldFluidSynth.append(try Measure.run(fluidsynth, ["-ni", "-F", out, SoundFont.defaultPath, path(shortSong)]).seconds)
}

// MARK: - Offline render speed (audio seconds per wall second)

let renderFiles = ["test-c-major-scale.mid", "test-karaoke-kar.mid", "test-all-gm-sounds.mid"]
var speedRows: [(file: String, ours: Double, oursCold: Double, theirs: Double)] = []
for file in renderFiles {
    var ours: [Double] = [], oursCold: [Double] = [], theirs: [Double] = []
    for _ in 0..<max(3, runs / 2) {
        let ourOut = scratch.appendingPathComponent("ours.wav").path
        var start = ContinuousClock.now
        let song = try MIDIFileReader.read(contentsOfFile: path(file))
        let summary = try await OfflineRenderer.render(song, soundFont: font, to: ourOut)
        ours.append(summary.audioSeconds / Measure.seconds(ContinuousClock.now - start))

        start = ContinuousClock.now
        let cold = try await RenderRequest(midiPath: path(file), outputPath: ourOut).run()
        oursCold.append(cold.audioSeconds / Measure.seconds(ContinuousClock.now - start))

        let theirOut = scratch.appendingPathComponent("theirs.wav").path
        let result = try Measure.run(fluidsynth, ["-ni", "-F", theirOut, SoundFont.defaultPath, path(file)])
        theirs.append(Measure.wavSeconds(theirOut) / result.seconds)
    }
    speedRows.append((file, Measure.median(ours), Measure.median(oursCold), Measure.median(theirs)))
}

// MARK: - A practice loop: ours against fluidsynth -F on the passes written out

let loop = try await LoopRender.measure(file: "test-karaoke-kar.mid", path: path("test-karaoke-kar.mid"), loop: "2-3", passes: 50,
                                        runs: max(3, runs / 2), font: font, scratch: scratch, fluidsynth: fluidsynth)

// MARK: - A live control to the first sample of the new position

var live: [LiveControlLatency.Figures] = []
for file in ["test-karaoke-kar.mid", "test-all-gs-sounds.mid"] {
    // A SoundFont of its own: the practice loop's source may still hold the shared one's synthesiser.
    live.append(try await LiveControlLatency.measure(file: file, path: path(file), commands: max(20, runs * 6),
                                                     font: try await SoundFont.load()))
}

// MARK: - RSS with and without the SoundFont

let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
var rssWith: [Double] = [], rssWithout: [Double] = []
for _ in 0..<3 {
    rssWithout.append(Double(try Measure.run(me, ["rss-probe", "without"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan)
    rssWith.append(Double(try Measure.run(me, ["rss-probe", "with"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan)
}

// MARK: - Report (Markdown, for docs/BENCHMARKS.md)

func ms(_ seconds: Double) -> String { String(format: "%.2f ms", seconds * 1000) }
func x(_ value: Double) -> String { String(format: "%.0f×", value) }
let warm = Measure.median(warmFirstFrame), coldUs = Measure.median(coldInProcess), coldThem = Measure.median(coldFluidSynth)
print("""
| Play request → first audio frame (`\(shortSong)`, median of \(runs)) | time |
| --- | --- |
| speakerd engine, SoundFont preloaded (read + reset + first block) | \(ms(warm)) |
| speakerd engine, cold in-process (load SoundFont + read + first block) | \(ms(coldUs)) |
| cold `fluidsynth -ni -F` process, whole run (upper bound of its first frame) | \(ms(coldThem)) |
| ratio cold fluidsynth / preloaded engine | \(String(format: "%.0f×", coldThem / warm)) |

| Offline render speed, audio s per wall s (median of \(max(3, runs / 2))) | engine, preloaded | engine, cold (load + read + render) | `fluidsynth -ni -F` | ratio preloaded / fluidsynth | ratio cold / fluidsynth |
| --- | --- | --- | --- | --- | --- |
""")
for row in speedRows {
    print("| `\(row.file)` | \(x(row.ours)) | \(x(row.oursCold)) | \(x(row.theirs)) | \(String(format: "%.2f", row.ours / row.theirs)) | \(String(format: "%.2f", row.oursCold / row.theirs)) |")
}
print("""

| Practice loop: `\(loop.file)` bars 2–3 × \(loop.passes) (median of \(max(3, runs / 2))) | figure |
| --- | --- |
| arranging the loop (chase, seams, \(loop.passes) passes) | \(ms(loop.arrangeSeconds)) |
| render speed, speakerd (`render --loop 2-3 --loop-count \(loop.passes)`), audio s per wall s | \(x(loop.ours)) |
| render speed, `fluidsynth -ni -F` on the passes written out as one file | \(x(loop.theirs)) |
| ratio speakerd / fluidsynth | \(String(format: "%.2f", loop.ours / loop.theirs)) |
| seam jitter (largest offset of a pass from its exact frame) | \(loop.seamJitterFrames) frames |

| A live control (`seek`, `loop`) → first sample of the new position, device pulling \(LiveControlLatency.periodFrames)-frame periods | events | re-arranging, median (max) | handing over (fresh synthesiser included), median (max) | to the first sample, median (max) |
| --- | --- | --- | --- | --- |
\(live.map { row in
    "| `\(row.file)` (\(row.toFirstSample.count) controls) | \(row.events) | \(ms(Measure.median(row.arrange))) (\(ms(row.arrange.max() ?? .nan))) | \(ms(Measure.median(row.handOver))) (\(ms(row.handOver.max() ?? .nan))) | \(ms(Measure.median(row.toFirstSample))) (\(ms(row.toFirstSample.max() ?? .nan))) |"
}.joined(separator: "\n"))

| Process RSS (median of 3 child processes) | RSS |
| --- | --- |
| engine built, SoundFont not loaded | \(String(format: "%.1f MiB", Measure.median(rssWithout) / 1024)) |
| engine built, SoundFont loaded | \(String(format: "%.1f MiB", Measure.median(rssWith) / 1024)) |
| cost of the loaded SoundFont | \(String(format: "%.1f MiB", (Measure.median(rssWith) - Measure.median(rssWithout)) / 1024)) |
""")

import AsyncSignals
/// The render loop shared by the outputs that push audio themselves (file and null): pull a block
/// from the source, hand it to `consume`, and either go on at once (offline) or wait on the clock
/// until the block's time has passed (real time).
///
/// Pausing waits for the resume instead of writing silence, so a paused WAV recording does not
/// grow and a paused null output costs nothing. Stopping ends the loop normally; cancellation
/// ends it at the next block or clock wait, also normally, so a file output still closes its file.
enum PacedRenderLoop {
    /// Frames per block: 1024 frames is 23 ms at 44.1 kHz, small enough for a fine position in real
    /// time and large enough for fast offline rendering (FluidSynth renders 64-frame blocks inside).
    static let blockFrames = 1024

    static func run(
        _ source: PlaybackSource,
        pacing: OutputPacing,
        consume: (UnsafeBufferPointer<Int16>) throws -> Void
    ) async throws {
        switch pacing {
        case .offline:
            try await runOffline(source, consume: consume)
        case let .realTime(clock):
            try await runRealTime(source, clock: clock, consume: consume)
        }
    }

    private static func runOffline(_ source: PlaybackSource, consume: (UnsafeBufferPointer<Int16>) throws -> Void) async throws {
        var buffer = [Int16](repeating: 0, count: blockFrames * 2)
        var blocks = 0
        while !Task.isCancelled {
            if source.isPaused {
                await source.waitWhilePaused()
                continue
            }
            guard let frames = buffer.withUnsafeMutableBufferPointer({ source.renderUnlessPaused(into: $0) }) else { continue }
            if frames == 0 { break }
            try buffer.withUnsafeBufferPointer { try consume(UnsafeBufferPointer(rebasing: $0.prefix(frames * 2))) }
            blocks += 1
            // Rendering is CPU work on the shared cooperative pool: give other tasks a turn now
            // and then (every ~0.75 s of audio, a few milliseconds of CPU).
            if blocks % 32 == 0 { await Task.yield() }
        }
    }

    private static func runRealTime<C: Clock<Duration>>(
        _ source: PlaybackSource, clock: C, consume: (UnsafeBufferPointer<Int16>) throws -> Void
    ) async throws {
        var buffer = [Int16](repeating: 0, count: blockFrames * 2)
        var start = clock.now
        var framesSinceStart = 0
        var pausesSeen = source.pauseCount
        while !Task.isCancelled {
            if source.isPaused {
                await source.waitWhilePaused()
                pausesSeen = -1 // Whatever the count, pace from the resume.
                continue
            }
            if source.pauseCount != pausesSeen {
                // A pause happened (perhaps entirely while we slept): it lasted however long it
                // did, so pace from now instead of catching up on the paused time.
                pausesSeen = source.pauseCount
                start = clock.now
                framesSinceStart = 0
            }
            guard let frames = buffer.withUnsafeMutableBufferPointer({ source.renderUnlessPaused(into: $0) }) else { continue }
            if frames == 0 { break }
            try buffer.withUnsafeBufferPointer { try consume(UnsafeBufferPointer(rebasing: $0.prefix(frames * 2))) }
            framesSinceStart += frames
            let due = start.advanced(by: .seconds(Double(framesSinceStart) / Double(source.sampleRate)))
            do {
                try await clock.sleep(until: due, tolerance: nil)
            } catch is CancellationError {
                break
            }
        }
    }
}

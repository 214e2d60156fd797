import Logging
import PlaybackService

/// Gives the daemon's idle code back to the kernel (``ResidentCode``) when it goes quiet: shortly
/// after start-up's graph has run (``afterStartup``: its code never runs again, and the stragglers
/// that follow it, logind and the first status signals, have run by then), and when playback has
/// been quiet for ``quietDelay`` (a song's code stays mapped while songs follow one another).
///
/// One timer at most; playback activity cancels it, and winding down stops it.
actor IdleCodeFeature: DaemonFeature {
    /// How long playback must stay quiet before its code is released.
    static let quietDelay = Duration.seconds(30)
    /// How long after start-up's graph has run its code is released.
    static let afterStartup = Duration.seconds(5)

    private let release: @Sendable () -> Void
    private let clock: ErasedClock
    private var timer: Task<Void, Never>?
    /// A song waits, plays or is paused: nothing is released then (faulting the render path's
    /// code back in, and trimming the heap under malloc's locks, must never cost a song a gap).
    private var playing = false
    private var stopped = false

    init(release: @escaping @Sendable () -> Void, clock: ErasedClock) {
        self.release = release
        self.clock = clock
    }

    /// Start-up has run: what it touched is released ``afterStartup`` from now, unless a song
    /// is under way (a start-up run again after bluetoothd came back, mid-song): then the song's
    /// own quiet releases it.
    func startupEnded() {
        guard !stopped, !playing else { return }
        timer?.cancel()
        arm(after: Self.afterStartup)
    }

    /// The player said what it is doing: quiet (idle, stopped, failed) starts the timer, anything
    /// else (waiting, playing, paused) cancels it.
    func playback(_ activity: PlaybackSnapshot.Activity) {
        guard !stopped else { return }
        switch activity {
        case .idle, .stopped, .failed:
            playing = false
            if timer == nil { arm(after: Self.quietDelay) }
        case .waiting, .playing, .paused:
            playing = true
            timer?.cancel()
            timer = nil
        }
    }

    private func arm(after delay: Duration) {
        let clock = clock
        timer = Task { [weak self] in
            guard (try? await clock.sleep(for: delay)) != nil else { return }
            await self?.fire()
        }
    }

    private func fire() {
        guard !stopped, !playing, !Task.isCancelled else { return }
        timer = nil
        release()
    }

    func stop() async {
        stopped = true
        timer?.cancel()
        timer = nil
    }
}

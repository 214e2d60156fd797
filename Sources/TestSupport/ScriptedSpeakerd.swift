import BlueZ

import SpeakerdAPI

/// A speakerd whose status follows a script, one step per `status` call (the last repeats), for
/// testing clients such as `play --wait` without a daemon. Every status call is counted and
/// announced on `calls`, so a test knows when its client is waiting. Anything else is refused.
public actor ScriptedSpeakerd: SpeakerdControl {
    private var script: [StatusReport.Playback]
    /// The running count of status calls, one element per call.
    public nonisolated let calls: AsyncStream<Int>
    private let callFeed: AsyncStream<Int>.Continuation
    public private(set) var statusCalls = 0

    public init(_ script: [StatusReport.Playback]) {
        precondition(!script.isEmpty, "a script needs at least one step")
        self.script = script
        (calls, callFeed) = AsyncStream.makeStream(of: Int.self)
    }

    public func status() async throws(SpeakerdError) -> StatusReport {
        statusCalls += 1
        callFeed.yield(statusCalls)
        let playback = script.count > 1 ? script.removeFirst() : script[0]
        return StatusReport(readiness: "playbackReady", message: "Ready: JBL Flip 5",
                            speaker: .init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: true),
                            playback: playback)
    }

    public func startup() async throws(SpeakerdError) -> StartupReport { throw .local("not scripted") }
    public func scan() async throws(SpeakerdError) -> ScanReport { throw .local("not scripted") }
    public func speakers() async throws(SpeakerdError) -> SpeakersReport { throw .local("not scripted") }
    public func connect(_ address: BluetoothAddress?) async throws(SpeakerdError) -> StatusReport { throw .local("not scripted") }
    public func disconnect() async throws(SpeakerdError) -> StatusReport { throw .local("not scripted") }
    public func forget(_ address: BluetoothAddress) async throws(SpeakerdError) -> SpeakersReport { throw .local("not scripted") }
    public func play(_ request: PlayRequest) async throws(SpeakerdError) -> StatusReport { throw .local("not scripted") }
    public func stop() async throws(SpeakerdError) -> StatusReport { throw .local("not scripted") }
    public func pause() async throws(SpeakerdError) -> StatusReport { throw .local("not scripted") }
    public func resume() async throws(SpeakerdError) -> StatusReport { throw .local("not scripted") }
}

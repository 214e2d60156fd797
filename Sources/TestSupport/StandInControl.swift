import BlueZ
import SpeakerdAPI

/// A `SpeakerdControl` for tests of the API edge (the exported object, the client): every
/// method a test does not script answers at once with `standingReport` or an empty report.
public protocol StandInControl: SpeakerdControl {
    var standingReport: StatusReport { get }
}

extension StandInControl {
    public func status() async throws(SpeakerdError) -> StatusReport { standingReport }
    public func startup() async throws(SpeakerdError) -> StartupReport { StartupReport(scenario: "regular", operations: [], criticalPath: []) }
    public func scan() async throws(SpeakerdError) -> ScanReport { ScanReport(candidates: []) }
    public func speakers() async throws(SpeakerdError) -> SpeakersReport { SpeakersReport(speakers: []) }
    public func connect(_ address: BluetoothAddress?) async throws(SpeakerdError) -> StatusReport { standingReport }
    public func disconnect() async throws(SpeakerdError) -> StatusReport { standingReport }
    public func forget(_ address: BluetoothAddress) async throws(SpeakerdError) -> SpeakersReport { SpeakersReport(speakers: []) }
    public func stop() async throws(SpeakerdError) -> StatusReport { standingReport }
    public func pause() async throws(SpeakerdError) -> StatusReport { standingReport }
    public func resume() async throws(SpeakerdError) -> StatusReport { standingReport }
}

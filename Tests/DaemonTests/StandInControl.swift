@testable import BlueZ
@testable import SpeakerCore
@testable import SpeakerdAPI

/// A `SpeakerdControl` for tests of the API edge (the exported object, the client): every
/// method a test does not script answers at once with `standingReport` or an empty report.
protocol StandInControl: SpeakerdControl {
    var standingReport: StatusReport { get }
}

extension StandInControl {
    func status() async throws(SpeakerdError) -> StatusReport { standingReport }
    func startup() async throws(SpeakerdError) -> StartupReport { StartupReport(scenario: "regular", operations: [], criticalPath: []) }
    func scan() async throws(SpeakerdError) -> ScanReport { ScanReport(candidates: []) }
    func speakers() async throws(SpeakerdError) -> SpeakersReport { SpeakersReport(speakers: []) }
    func connect(_ address: BluetoothAddress?) async throws(SpeakerdError) -> StatusReport { standingReport }
    func disconnect() async throws(SpeakerdError) -> StatusReport { standingReport }
    func forget(_ address: BluetoothAddress) async throws(SpeakerdError) -> SpeakersReport { SpeakersReport(speakers: []) }
    func stop() async throws(SpeakerdError) -> StatusReport { standingReport }
    func pause() async throws(SpeakerdError) -> StatusReport { standingReport }
    func resume() async throws(SpeakerdError) -> StatusReport { standingReport }
}

import Configuration
import Logging

/// What the daemon's reducer runs with and never changes: the configuration it was started
/// with, its dependencies (the clock, the wall clock, the bus, the audio backend, the player's
/// maker), the logger, and the clock erased once for the values that keep its instants. One
/// value, set at `init`, so that the reducer's stored state is only what it observes and decides.
struct DaemonEnvironment: Sendable {
    let configuration: DaemonConfiguration
    let dependencies: DaemonDependencies
    let logger: Logger
    let clock: ErasedClock
}

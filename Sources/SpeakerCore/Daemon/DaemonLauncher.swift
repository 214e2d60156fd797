import Glibc
import Logging
import PlaybackService
import ServiceLifecycle
import SpeakerdAPI
import Systemd
import UnixSignals
import Configuration

/// Builds and runs speakerd: configuration, systemd notification, the service group.
///
/// One `ServiceGroup` in dependency order with SIGTERM and SIGINT as graceful-shutdown
/// signals; shutdown runs in reverse, so the watchdog pacer stops first, then the playback
/// coordinator, then the daemon winds down its discovery.
public enum DaemonLauncher {
    /// The signals that shut the daemon down gracefully (systemd's stop, Ctrl-C). speakerd's main
    /// blocks them in every thread before it starts any, so that they wait for the signal sources
    /// swift-service-lifecycle reads them from instead of killing the process outright.
    public static let shutdownSignals: [Int32] = gracefulShutdownSignals.map(\.rawValue)
    private static let gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint]

    public static func run(options: DaemonOptions, environment: [String: String]) async throws(DaemonLaunchError) {
        let configuration: DaemonConfiguration
        do { configuration = try options.resolve(environment: environment) } catch {
            throw .configuration(error)
        }
        let logger = Logger(label: "speakerd")
        logger.info("\(startLine(configuration, configPath: options.configPath ?? DaemonConfiguration.defaultConfigPath))")
        let notifier: SystemdNotifier?
        do { notifier = try SystemdNotifier(environment: environment) } catch { throw .notify(error) }
        let dependencies = DaemonDependencies.live(configuration: configuration, logger: logger)
        let coordinator = SpeakerdDaemon(configuration: configuration, dependencies: dependencies,
                                         notifier: notifier, logger: logger)
        let daemon = SpeakerdService(daemon: coordinator)

        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: daemon)]
        // After the daemon, so it shuts down first: a song's output is closed complete while
        // the daemon (and its bus) is still there.
        if let playback = coordinator.playback?.lifecycleService {
            services.append(.init(service: playback))
        }
        if let notifier, let settings = WatchdogSettings(environment: environment, processID: getpid()) {
            let pacer = WatchdogPacer(settings: settings, clock: ContinuousClock(), notifier: notifier,
                                      logger: logger) {
                await daemon.heartbeat()
            }
            services.append(.init(service: pacer))
        }
        let group = ServiceGroup(configuration: .init(
            services: services, gracefulShutdownSignals: gracefulShutdownSignals, logger: logger))
        // The service group says nothing above debug when a signal stops it: one line here.
        let signalLine = Task {
            for await signal in await UnixSignalsSequence(trapping: gracefulShutdownSignals) {
                await coordinator.stopRequested()
                logger.info("stopping: \(signal) received")
                break
            }
        }
        defer { signalLine.cancel() }
        do { try await group.run() } catch SpeakerdServiceError.busLost(let bus) {
            throw .busLost(SpeakerdServiceError.busLost(bus).description)
        } catch let error as ServiceGroupError {
            throw .failed(String(describing: error))
        } catch {
            throw .failed("\(error)")
        }
    }
}

extension DaemonLauncher {
    /// The first line speakerd logs: what it is and what it was told, so a journal read later says
    /// which version ran with which configuration ("speakerd 0.1.0 starting: config
    /// /etc/speakerd/speakerd.conf, bus system, audio output auto").
    static func startLine(_ configuration: DaemonConfiguration, configPath: String) -> String {
        let config = access(configPath, F_OK) == 0 ? configPath : "\(configPath) (absent: defaults)"
        return "speakerd \(SpeakerdVersion.current) starting: config \(config), bus \(configuration.bus), "
            + "audio output \(configuration.audioOutput)"
    }
}

/// Why speakerd could not start or stopped with an error.
public enum DaemonLaunchError: Error, Sendable, CustomStringConvertible {
    case configuration(ConfigurationError)
    case notify(SystemdNotifyError)
    case failed(String)
    /// Our bus connection was lost; the daemon already logged this line as it wound down.
    case busLost(String)

    public var description: String {
        switch self {
        case .configuration(let error): error.description
        case .notify(let error): error.description
        case .failed(let detail), .busLost(let detail): detail
        }
    }

    /// 78 (EX_CONFIG) for configuration mistakes and 75 (EX_TEMPFAIL) for a lost bus, so
    /// systemd's status shows what kind of failure ("status=75/TEMPFAIL": a restart should fix it).
    public var exitStatus: Int32 {
        switch self {
        case .configuration: 78
        case .busLost: 75
        case .notify, .failed: 1
        }
    }

    /// Whether the daemon's log already holds this failure's line, so exiting adds no second one.
    public var isLogged: Bool {
        if case .busLost = self { return true }
        return false
    }
}

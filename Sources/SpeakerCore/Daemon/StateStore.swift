import BlueZ
import Configuration
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import Logging

/// The known speakers, persisted in `<state dir>/state.json`.
///
/// Every change is written atomically at once, so the file never holds half a list. A file
/// that cannot be trusted (corrupt, or written by a newer speakerd) is never overwritten:
/// it is moved aside to `state.json.corrupt-<timestamp>` and the daemon starts as on a first
/// run, because a speaker box that refuses to start is worse than one that forgot a speaker.
public actor StateStore {
    /// What `load` found, for the start-up timeline and `composer-cli doctor`.
    public enum LoadOutcome: Equatable, Sendable, CustomStringConvertible {
        /// No state file: first run.
        case firstRun
        /// The file was read; it lists this many speakers.
        case loaded(speakerCount: Int)
        /// The file could not be used; it was moved to `movedTo` and the store starts empty.
        case setAside(reason: String, movedTo: String)
        /// The file could not be used, nor moved aside (`notMoved` says why: its directory is not
        /// one, say); the store starts empty and the next save replaces the file if it can.
        case unusable(reason: String, notMoved: String)

        /// For the start-up log line ("state: 1 known speaker"). Written out rather than left to
        /// the default, which prints an enum's payload through reflection: that pulls the Mirror
        /// and demangler code into every start (docs/BENCHMARKS.md, "Start-up").
        public var description: String {
            switch self {
            case .firstRun: "no state file yet (first run)"
            case .loaded(let count): count == 1 ? "1 known speaker" : "\(count) known speakers"
            case let .setAside(reason, movedTo): "unusable (\(reason)); moved to \(movedTo), starting as on a first run"
            case let .unusable(reason, notMoved):
                "unusable (\(reason)) and not moved aside (\(notMoved)); starting as on a first run"
            }
        }
    }

    private enum State {
        case unloaded
        case loaded(StateFile)
    }

    public let directory: String
    public nonisolated var path: String { directory + "/state.json" }
    private var state: State = .unloaded
    private var unsaved = false
    private let logger: Logger

    public init(directory: String, logger: Logger = Logger(label: "speakerd.state")) {
        self.directory = directory
        self.logger = logger
    }

    /// Reads the file once; later calls return the same list without touching the disk.
    @discardableResult
    public func load(now: Date = Date()) -> LoadOutcome {
        if case .loaded(let file) = state { return .loaded(speakerCount: file.speakers.count) }
        removeLeftoverTempFiles()
        let outcome: LoadOutcome
        let file: StateFile
        do {
            // Only a regular file is read: a FIFO in its place would block start-up before the
            // bus name is taken (a restart loop under Type=notify), a symbolic link could point
            // anywhere. Either is set aside like a corrupt file.
            guard let text = try TextFile.readRegularFile(path) else {
                state = .loaded(.empty)
                return .firstRun
            }
            var decoded = try StateFile.decode(text)
            let duplicates = StateFile.mergeDuplicates(&decoded.speakers)
            if !duplicates.isEmpty {
                logger.warning("state file \(path) lists \(duplicates.map(\.description).joined(separator: ", ")) more than once; keeping the most recent entry")
            }
            file = decoded
            outcome = .loaded(speakerCount: file.speakers.count)
        } catch {
            let reason = String(describing: error)
            state = .loaded(.empty)
            switch setAside(now: now) {
            case .success(let aside):
                logger.error("state file \(path) set aside as \(aside): \(reason); starting as on a first run")
                return .setAside(reason: reason, movedTo: aside)
            case .failure(let notMoved):
                // Said as it is: a log claiming the file was moved sent people looking for a copy
                // that was never made.
                logger.error("state file \(path) is unusable (\(reason)) and could not be moved aside (\(notMoved.why)); starting as on a first run")
                return .unusable(reason: reason, notMoved: notMoved.why)
            }
        }
        state = .loaded(file)
        return outcome
    }

    /// The known speakers, last connected first.
    public var knownSpeakers: [KnownSpeaker] {
        guard case .loaded(let file) = state else { return [] }
        return file.speakers
    }

    /// Remembers a successful connection and moves the speaker to the front.
    public func recordConnection(to address: BluetoothAddress, name: String, at date: Date) throws(StateStoreError) {
        var file = try loadedFile()
        var speaker = KnownSpeaker(address: address, name: name, firstConnected: date, lastConnected: date)
        if let index = file.speakers.firstIndex(where: { $0.address == address }) {
            speaker.firstConnected = file.speakers[index].firstConnected
            speaker.volume = file.speakers[index].volume
            file.speakers.remove(at: index)
        }
        file.speakers.insert(speaker, at: 0)
        try save(file)
    }

    /// Remembers a known speaker's volume (written only when it changed); returns false, and
    /// remembers nothing, for a speaker that is not known (its connection not yet recorded).
    @discardableResult
    public func rememberVolume(_ percent: Int, of address: BluetoothAddress) throws(StateStoreError) -> Bool {
        var file = try loadedFile()
        guard let index = file.speakers.firstIndex(where: { $0.address == address }) else { return false }
        guard file.speakers[index].volume != percent else { return true }
        file.speakers[index].volume = percent
        try save(file)
        return true
    }

    /// Drops a speaker; returns false when it was not known.
    @discardableResult
    public func forget(_ address: BluetoothAddress) throws(StateStoreError) -> Bool {
        var file = try loadedFile()
        guard let index = file.speakers.firstIndex(where: { $0.address == address }) else { return false }
        file.speakers.remove(at: index)
        try save(file)
        return true
    }

    // MARK: - Disk

    private func loadedFile() throws(StateStoreError) -> StateFile {
        guard case .loaded(let file) = state else { throw .notLoaded }
        return file
    }

    private func save(_ file: StateFile) throws(StateStoreError) {
        let bytes: [UInt8]
        do { bytes = Array(try StateFile.encoder().encode(file)) + [0x0A] } catch {
            throw .encoding(String(describing: error))
        }
        // Memory holds the new list at once: a write that fails is tried again
        // (`savePending`), and meanwhile the daemon goes on with what it knows.
        state = .loaded(file)
        unsaved = true
        if mkdir(directory, 0o750) != 0 && errno != EEXIST {
            throw .write(FileWriteError(path: path, step: "create directory \(directory)", errno: errno))
        }
        do { try TextFile.writeAtomically(bytes, to: path) } catch { throw .write(error) }
        unsaved = false
    }

    /// Writes what an earlier failed write left unsaved; does nothing when all is saved.
    public func savePending() throws(StateStoreError) {
        guard unsaved else { return }
        try save(try loadedFile())
    }

    /// Whether the known speakers in memory are not yet on disk (a write failed).
    public var hasUnsavedChanges: Bool { unsaved }

    /// Why a file could not be moved aside.
    private struct NotMoved: Error { let why: String }

    private func setAside(now: Date) -> Result<String, NotMoved> {
        let stamp = Self.timestamp(now)
        var target = "\(path).corrupt-\(stamp)"
        var suffix = 1
        while access(target, F_OK) == 0 {
            suffix += 1
            target = "\(path).corrupt-\(stamp)-\(suffix)"
        }
        guard rename(path, target) == 0 else { return .failure(NotMoved(why: String(cString: strerror(errno)))) }
        return .success(target)
    }

    /// `20261121T145303Z`: ISO 8601 in UTC without separators, so it sorts and fits a file name.
    static func timestamp(_ date: Date) -> String {
        Date.ISO8601FormatStyle(dateSeparator: .omitted, dateTimeSeparator: .standard, timeSeparator: .omitted,
                                timeZoneSeparator: .omitted, timeZone: .gmt).format(date)
    }

    /// A crash between create and rename leaves a temp file; it never holds the truth.
    private func removeLeftoverTempFiles() {
        let prefix = TextFile.tempPrefix(for: path)
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for entry in entries where entry.hasPrefix(prefix) {
            unlink(directory + "/" + entry)
        }
    }
}

/// A state change that could not be saved; the list in memory is left as it was.
public enum StateStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    case notLoaded
    case encoding(String)
    case write(FileWriteError)

    public var description: String {
        switch self {
        case .notLoaded: "the state store was used before it was loaded"
        case .encoding(let detail): "cannot encode state: \(detail)"
        case .write(let error): error.description
        }
    }
}

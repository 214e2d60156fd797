import AsyncSignals
import MIDI
import SpeakerdAPI
import SystemPackage

/// Reads a song from the descriptor a client sent with `play`, then closes it.
///
/// The daemon never opens client paths: the client opens the file with its own permissions and
/// passes the descriptor over D-Bus. A descriptor may be a pipe that is slow or never closed (a
/// client streaming `cat song.mid |`), so the bytes are read without holding a thread
/// (`ClientFileReader`), within the size limit and `timeout` on the daemon's clock. The
/// descriptor is closed whatever happens, so a failed request never leaks one.
///
/// The bytes read are held in `budget` under the request's client until the song is parsed
/// (see `SongReadBudget`): past the budget the request is `busy`, at once.
enum ClientSongReader {
    static func read(_ request: PlayRequest, limits: MIDIReadLimits, timeout: Duration,
                     clock: any Clock<Duration>, budget: SongReadBudget) async throws(PlaybackServiceError) -> MIDISong {
        let name = request.displayName
        let account = budget.account(for: request.client)
        defer { account.releaseAll() }
        let bytes: [UInt8]
        do {
            bytes = try await ClientFileReader.readAll(request.file, limit: limits.maxFileBytes, timeout: timeout, clock: clock,
                                                       account: account)
        } catch .notASong(let kind) {
            throw .invalidSong(file: name, reason: "it is \(kind), not a MIDI file")
        } catch .fileTooLarge(let size, let limit) {
            throw .songTooLarge(file: name, bytes: size, limit: limit)
        } catch .busy(let refusal) {
            throw .busy(file: name, reason: refusal.description)
        } catch {
            throw .invalidSong(file: name, reason: error.sentence(timeout: timeout))
        }
        do {
            return try MIDIFileReader.read(bytes, limits: limits)
        } catch {
            throw .invalidSong(file: name, reason: error.description)
        }
    }
}

extension ClientFileReader.Failure {
    /// The reason part of the one-line error the client gets.
    func sentence(timeout: Duration) -> String {
        switch self {
        case let .tooLarge(received, limit):
            MIDIFileError(.limitExceeded(.fileBytes, value: received, limit: limit)).description
        case let .timedOut(received):
            "the client sent \(received) bytes and then did not finish within \(timeout.spokenSeconds) "
                + "(a pipe whose writer never closed?); send the whole file and close it"
        case let .unreadable(reason):
            "cannot read what the client sent: \(reason)"
        case .cancelled:
            "the request was cancelled while the song was being read"
        case let .notASong(kind):
            "what the client sent is \(kind), not a MIDI file"
        case let .fileTooLarge(size, limit):
            "the file is \(Mebibytes.amount(size, over: limit)), over the \(Mebibytes.limit(limit)) limit for one song"
        case let .busy(refusal):
            refusal.description
        }
    }
}

import SpeakerdAPI
/// The one-line progress display `composer-cli play --wait` redraws on a terminal:
///
///     ♪ Blue in Green — JBL Flip 5  ███████▌            1:12 / 3:04
///
/// Pure so it can be tested for every width; the command only decides when to redraw.
public struct ProgressLine: Equatable, Sendable {
    public var title: String
    public var speaker: String?
    public var elapsedSeconds: Double
    public var totalSeconds: Double?
    /// `waiting`, `playing` or `paused`: shown instead of the bar when not playing.
    public var state: String
    /// While `waiting`: what the daemon waits for (its `waitingFor` sentence), shown with a
    /// spinner; while `paused`, the same sentence says the speaker's loss paused it (none: the user did).
    public var waitingFor: String?
    /// Which spinner frame to draw (the caller counts redraws).
    public var frame: Int

    public init(title: String, speaker: String?, elapsedSeconds: Double, totalSeconds: Double?, state: String,
                waitingFor: String? = nil, frame: Int = 0) {
        self.title = title
        self.speaker = speaker
        self.elapsedSeconds = elapsedSeconds
        self.totalSeconds = totalSeconds
        self.state = state
        self.waitingFor = waitingFor
        self.frame = frame
    }

    static let spinner: [Character] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

    /// Renders to exactly `width` columns (at least 20), truncating the title first.
    public func rendered(width: Int) -> String {
        let width = max(20, width)
        if state == "waiting", let waitingFor {
            // "⠹ song.mid: waiting — connecting to JBL Flip 5…": the reason is what matters.
            let line = "\(Self.spinner[abs(frame) % Self.spinner.count]) \(title): waiting — \(waitingFor)"
            return line.count <= width ? padded(line, to: width) : String(line.prefix(width - 1)) + "…"
        }
        let times = formatClock(elapsedSeconds) + (totalSeconds.map { " / " + formatClock($0) } ?? "")
        var label = title + (speaker.map { " — \($0)" } ?? "")
        let barWidth = max(0, min(30, width - times.count - 12))
        let maxLabel = max(1, width - times.count - barWidth - 6)
        if label.count > maxLabel { label = String(label.prefix(maxLabel - 1)) + "…" }
        if state == "paused" {
            // Why it is paused, which decides what to do: wait for the speaker, or resume it.
            let why = waitingFor.map { "paused — \($0); it resumes when the speaker is back" }
                ?? "paused — 'composer-cli resume' continues it"
            let line = "⏸ \(title): \(why)  \(times)"
            return line.count <= width ? padded(line, to: width) : String(line.prefix(width - 1)) + "…"
        }
        let middle: String
        if state == "playing", let total = totalSeconds, total > 0 {
            middle = Self.bar(fraction: elapsedSeconds / total, width: barWidth)
        } else {
            middle = padded("(\(state))", to: barWidth)
        }
        let left = "♪ " + padded(label, to: maxLabel) + "  "
        let line = left + middle + "  " + times
        return line.count < width ? line + String(repeating: " ", count: width - line.count) : String(line.prefix(width))
    }

    /// A bar with eighth-block resolution, so short songs still move visibly.
    static func bar(fraction: Double, width: Int) -> String {
        guard width > 0 else { return "" }
        let clamped = min(1, max(0, fraction.isFinite ? fraction : 0))
        let eighths = Int((clamped * Double(width * 8)).rounded(.down))
        let full = eighths / 8, remainder = eighths % 8
        let partials: [Character] = [" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
        var text = String(repeating: "█", count: full)
        if full < width { text.append(partials[remainder]) }
        return padded(text, to: width)
    }
}

/// What `composer-cli` says for a first word that is no subcommand: the nearest one, if any is
/// near enough to be a typo, and where the list is ("stauts" → "did you mean 'status'?").
///
/// ArgumentParser alone says "Unexpected argument 'stauts'", which names neither the mistake nor
/// the fix. Options (words starting with "-") are left to ArgumentParser.
public struct SubcommandSuggestion: Equatable, Sendable {
    /// The word given.
    public var word: String
    /// The nearest subcommand, nil when none is close.
    public var suggestion: String?

    /// nil when `arguments` starts with a known subcommand, an option, or nothing.
    public init?(arguments: [String], known: [String]) {
        guard let first = arguments.first, !first.hasPrefix("-"), !known.contains(first) else { return nil }
        word = first
        suggestion = Self.nearest(to: first, among: known)
    }

    /// The one line (without the program's prefix, which CommandFailure adds).
    public func sentence(program: String) -> String {
        if let suggestion {
            return "unknown subcommand '\(word)'; did you mean '\(suggestion)'? See '\(program) --help'"
        }
        return "unknown subcommand '\(word)'; see '\(program) --help' for the list"
    }

    /// The closest name: a unique one the word begins (`sta` is ambiguous, `conn` is `connect`),
    /// else the smallest edit distance if it is at most a third of the word (at least 2).
    static func nearest(to word: String, among known: [String]) -> String? {
        let lowered = word.lowercased()
        let prefixed = known.filter { $0.hasPrefix(lowered) }
        if prefixed.count == 1 { return prefixed[0] }
        let limit = max(2, lowered.count / 3)
        let scored = known.map { (name: $0, distance: editDistance(lowered, $0)) }.filter { $0.distance <= limit }
        guard let best = scored.min(by: { $0.distance < $1.distance }) else { return nil }
        // Two names equally near: a guess would be as likely wrong as right.
        return scored.filter { $0.distance == best.distance }.count == 1 ? best.name : nil
    }

    /// Levenshtein distance with adjacent transpositions counted as one edit ("stauts").
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}

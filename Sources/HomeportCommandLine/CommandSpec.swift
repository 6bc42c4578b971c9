import Foundation

/// Describes one command: its options, its positional arguments and its help text.
public struct CommandSpec: Sendable {
    /// The full command as typed, such as `homeport-server identity reset`.
    public var name: String
    /// One line saying what the command does.
    public var summary: String
    /// Positional arguments, as shown in the usage line (`SERVER`, `URL`).
    public var arguments: [Argument]
    /// The options the command takes (`--help` is always accepted).
    public var options: [Option]
    /// Paragraphs after the option list: examples, exit codes, caveats.
    public var discussion: String
    /// How many of ``arguments`` may be left out (the command reads what it got).
    public var optionalArguments = 0

    /// Creates a command description.
    public init(
        name: String, summary: String, arguments: [Argument] = [], options: [Option] = [], discussion: String = ""
    ) {
        self.name = name
        self.summary = summary
        self.arguments = arguments
        self.options = options
        self.discussion = discussion
    }

    /// A positional argument.
    public struct Argument: Sendable {
        /// Its placeholder, such as `URL`.
        public var name: String
        /// What it is.
        public var help: String

        /// Creates an argument.
        public init(_ name: String, help: String) {
            self.name = name
            self.help = help
        }
    }

    /// An option: `--name VALUE`, or a flag (`--name`) when ``valueName`` is `nil`.
    public struct Option: Sendable {
        /// The long name without dashes.
        public var name: String
        /// The placeholder of its value; `nil` for a flag.
        public var valueName: String?
        /// What it does.
        public var help: String
        /// The environment variable that supplies it when the flag is absent.
        public var environment: String?
        /// The default, as shown in help.
        public var defaultDescription: String?

        /// Creates an option that takes a value.
        public static func value(
            _ name: String, _ valueName: String, help: String, environment: String? = nil, default: String? = nil
        ) -> Option {
            Option(
                name: name, valueName: valueName, help: help, environment: environment, defaultDescription: `default`)
        }

        /// Creates a flag; with `environment`, a variable may switch it on where the command line
        /// cannot be changed (a service's settings file): see ``ParsedArguments/flag(_:spec:environment:)``.
        public static func flag(_ name: String, help: String, environment: String? = nil) -> Option {
            Option(name: name, valueName: nil, help: help, environment: environment, defaultDescription: nil)
        }
    }

    /// The help text: usage line, summary, arguments, options with their environment variables and defaults.
    public var help: String {
        var usage = "Usage: \(name)"
        for argument in arguments { usage += " \(argument.name)" }
        if !options.isEmpty { usage += " [options]" }
        var text = "\(summary)\n\n\(usage)\n"
        if !arguments.isEmpty {
            text += "\nArguments:\n"
            for argument in arguments { text += Self.row(argument.name, argument.help) }
        }
        text += "\nOptions:\n"
        for option in options {
            var help = option.help
            if let environment = option.environment { help += " [env: \(environment)]" }
            if let value = option.defaultDescription { help += " (default: \(value))" }
            let label = option.valueName.map { "--\(option.name) \($0)" } ?? "--\(option.name)"
            text += Self.row(label, help)
        }
        text += Self.row("-h, --help", "Show this help.")
        if !discussion.isEmpty { text += "\n\(discussion)\n" }
        return text
    }

    private static func row(_ label: String, _ help: String) -> String {
        let padded =
            label.count < 26
            ? label + String(repeating: " ", count: 26 - label.count) : label + "\n" + String(repeating: " ", count: 28)
        return "  \(padded)\(help)\n"
    }
}

extension CommandSpec {
    /// The same command under another program's name: `program` becomes `replacement` in its
    /// name, summary, discussion and help texts (a product's executable reusing these commands).
    public func renamingProgram(_ program: String, to replacement: String) -> CommandSpec {
        guard program != replacement else { return self }
        let rename = { (text: String) in text.replacingOccurrences(of: program, with: replacement) }
        var spec = self
        spec.name = rename(name)
        spec.summary = rename(summary)
        spec.discussion = rename(discussion)
        spec.arguments = arguments.map { .init($0.name, help: rename($0.help)) }
        spec.options = options.map { option in
            var option = option
            option.help = rename(option.help)
            option.defaultDescription = option.defaultDescription.map(rename)
            return option
        }
        return spec
    }
}

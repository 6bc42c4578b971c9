// swift-tools-version:6.0
import PackageDescription

// BookOrbit: a book server built on Homeport, as a product outside the Homeport package would be.
let package = Package(
    name: "BookOrbit",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Homeport", path: "../..")],
    targets: [
        .target(name: "BookOrbit", dependencies: [.product(name: "HomeportServer", package: "Homeport")]),
        .executableTarget(name: "bookorbit-server", dependencies: ["BookOrbit"]),
        .testTarget(
            name: "BookOrbitTests",
            dependencies: [
                "BookOrbit",
                .product(name: "HomeportClient", package: "Homeport"),
                .product(name: "HomeportTestSupport", package: "Homeport"),
                .product(name: "HomeportTesting", package: "Homeport"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

import Foundation

/// `--chart FILE.svg`: cost per operation against size, log–log, one line per impl, one panel
/// per chart family (`set.N` over N observers; each array scenario over N elements), plus a
/// panel of heap bytes per element for the families that measure them (array.setup). Written by
/// hand: no plotting dependency.
struct ChartReport {
    var rows: [ResultRow]
    var machine: MachineInfo

    static let colors: [Impl: String] = [
        .c: "#d62728", .swift: "#ff7f0e", .naive: "#7f7f7f", .observation: "#1f77b4",
        .opencombine: "#2ca02c", .plain: "#111111", .diff: "#9467bd", .perElementNaive: "#8c564b",
        .scan: "#e377c2",
    ]

    private let width = 920.0
    private let panelHeight = 500.0
    private let left = 90.0, right = 190.0, top = 64.0, bottom = 70.0

    struct Point { var x: Int; var y: Double; var low: Double; var high: Double }

    /// Panels in the order their families first appear; a family whose rows measure bytes gets
    /// a second panel of bytes per item right after its time panel.
    private var panels: [(family: ChartFamily, series: [(Impl, [Point])], bytes: Bool)] {
        var order: [ChartFamily] = []
        for row in rows { if let f = row.chartFamily, !order.contains(f) { order.append(f) } }
        var result: [(family: ChartFamily, series: [(Impl, [Point])], bytes: Bool)] = []
        for family in order {
            let timeRows = rows.filter { $0.chartFamily == family && $0.median != nil }
            result.append((family, series(timeRows) { row in
                Point(x: row.n, y: row.median!, low: row.spread?.min ?? row.median!, high: row.spread?.max ?? row.median!)
            }, false))
            let byteRows = rows.filter { $0.chartFamily == family && ($0.bytesPerItem ?? 0) > 0 }
            if !byteRows.isEmpty {
                let title = family.title.split(separator: "—").first.map { $0.trimmingCharacters(in: .whitespaces) }
                    ?? family.title
                let bytesFamily = ChartFamily(title: "\(title) — heap bytes held per element (malloc accounting)",
                                              xLabel: family.xLabel, yLabel: "bytes per element")
                result.append((bytesFamily, series(byteRows) { row in
                    Point(x: row.n, y: row.bytesPerItem!, low: row.bytesSpread?.min ?? row.bytesPerItem!,
                          high: row.bytesSpread?.max ?? row.bytesPerItem!)
                }, true))
            }
        }
        return result
    }

    private func series(_ familyRows: [ResultRow], _ point: (ResultRow) -> Point) -> [(Impl, [Point])] {
        var series: [(Impl, [Point])] = []
        for impl in Impl.allCases {
            let points = familyRows.filter { $0.impl == impl }.map(point).sorted { $0.x < $1.x }
            if !points.isEmpty { series.append((impl, points)) }
        }
        return series
    }

    func render() -> String {
        let panels = self.panels
        let height = max(1, Double(panels.count)) * panelHeight + 30
        var svg: [String] = []
        svg.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
                   + "viewBox=\"0 0 \(Int(width)) \(Int(height))\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">")
        svg.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>")
        if panels.isEmpty {
            svg.append(text(width / 2, 60, "no charted scenario was run (set.N, array.*)", anchor: "middle", size: 14))
        }
        for (index, panel) in panels.enumerated() {
            svg.append(contentsOf: renderPanel(panel.family, panel.series, bytes: panel.bytes,
                                               originY: Double(index) * panelHeight))
        }
        svg.append(text(width - 10, height - 10, "observe-bench · \(machine.hostname) · \(machine.cores) cores · \(machine.date)",
                        anchor: "end", size: 10, color: "#888"))
        svg.append("</svg>")
        return svg.joined(separator: "\n") + "\n"
    }

    private func renderPanel(_ family: ChartFamily, _ series: [(Impl, [Point])], bytes: Bool, originY: Double) -> [String] {
        var out: [String] = []
        let plotLeft = left, plotRight = width - right
        let plotTop = originY + top, plotBottom = originY + panelHeight - bottom
        out.append(text(plotLeft, originY + 26, family.title, size: 16, weight: "bold"))
        out.append(text(plotLeft, originY + 46,
                        "median \(family.yLabel) (log scale); bars: min–max of repetition medians; lower is better",
                        size: 11, color: "#555"))
        func label(_ value: Double) -> String { bytes ? bytesLabel(value) : nsLabel(value) }
        func figure(_ value: Double) -> String { bytes ? String(format: "%.1f B", value) : formatNs(value) + " ns" }

        let xs = Set(series.flatMap { $0.1.map(\.x) }).sorted()
        let ys = series.flatMap { $0.1.flatMap { [$0.low, $0.high, $0.y] } }.filter { $0 > 0 }
        guard !xs.isEmpty, !ys.isEmpty else { return out }

        // x: log10 of the size; 0 sits one decade left of the smallest positive size.
        let positive = xs.filter { $0 > 0 }
        let minPositiveLog = positive.isEmpty ? 0 : log10(Double(positive.min()!))
        let maxLog = positive.isEmpty ? 1 : log10(Double(positive.max()!))
        let hasZero = xs.contains(0)
        func xLog(_ x: Int) -> Double { x > 0 ? log10(Double(x)) : minPositiveLog - 1 }
        var xLow = hasZero ? minPositiveLog - 1 : minPositiveLog
        var xHigh = maxLog
        if xHigh - xLow < 1 { xLow -= 0.5; xHigh += 0.5 }
        let xPad = (xHigh - xLow) * 0.06
        xLow -= xPad; xHigh += xPad
        func px(_ x: Int) -> Double { plotLeft + (xLog(x) - xLow) / (xHigh - xLow) * (plotRight - plotLeft) }

        // y: log10 of ns, whole decades.
        // (a tenth of a decade of margin, so no point sits on the frame)
        let yLow = floor(log10(ys.min()!) - 0.1), yHigh = max(ceil(log10(ys.max()!) + 0.1), yLow + 1)
        func py(_ y: Double) -> Double { plotBottom - (log10(y) - yLow) / (yHigh - yLow) * (plotBottom - plotTop) }

        // Grid and y labels.
        out.append("<rect x=\"\(f(plotLeft))\" y=\"\(f(plotTop))\" width=\"\(f(plotRight - plotLeft))\" "
                   + "height=\"\(f(plotBottom - plotTop))\" fill=\"none\" stroke=\"#999\"/>")
        var decade = yLow
        while decade <= yHigh {
            let value = pow(10, decade)
            out.append(line(plotLeft, py(value), plotRight, py(value), color: "#ccc"))
            out.append(text(plotLeft - 8, py(value) + 4, label(value), anchor: "end"))
            if decade < yHigh {
                for minor in [2.0, 5.0] {
                    let v = value * minor
                    out.append(line(plotLeft, py(v), plotRight, py(v), color: "#eee"))
                }
            }
            decade += 1
        }
        out.append(text(plotLeft - 62, (plotTop + plotBottom) / 2, family.yLabel, anchor: "middle",
                        rotate: -90))

        // x ticks at every measured size.
        for x in xs {
            out.append(line(px(x), plotTop, px(x), plotBottom, color: "#eee"))
            out.append(text(px(x), plotBottom + 18, groupThousands(x), anchor: "middle"))
        }
        if hasZero && !positive.isEmpty {
            // Mark the break between 0 and the log axis.
            let breakX = (px(0) + px(positive.min()!)) / 2
            out.append(text(breakX, plotBottom + 5, "//", anchor: "middle", size: 12, color: "#777"))
        }
        out.append(text((plotLeft + plotRight) / 2, plotBottom + 44, family.xLabel + " (log scale)", anchor: "middle"))

        // Series (ObserveCore's C path drawn last, on top).
        for (impl, points) in series.sorted(by: { ($0.0 == .c ? 1 : 0) < ($1.0 == .c ? 1 : 0) }) {
            let color = Self.colors[impl] ?? "#000"
            let dash = impl == .plain ? " stroke-dasharray=\"5,4\"" : ""
            let strokeWidth = impl == .c ? 3.0 : 2.0
            if points.count > 1 {
                let path = points.map { "\(f(px($0.x))),\(f(py($0.y)))" }.joined(separator: " ")
                out.append("<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"\(strokeWidth)\"\(dash)/>")
            }
            for point in points {
                if point.high > point.low {
                    out.append(line(px(point.x), py(point.low), px(point.x), py(point.high), color: color, width: 1))
                }
                out.append("<circle cx=\"\(f(px(point.x)))\" cy=\"\(f(py(point.y)))\" r=\"4\" fill=\"\(color)\">"
                           + "<title>\(impl.rawValue) n=\(point.x): \(figure(point.y))</title></circle>")
            }
        }

        // Legend.
        var legendY = plotTop + 10
        for (impl, points) in series {
            let color = Self.colors[impl] ?? "#000"
            let dash = impl == .plain ? " stroke-dasharray=\"5,4\"" : ""
            out.append("<line x1=\"\(f(plotRight + 16))\" y1=\"\(f(legendY))\" x2=\"\(f(plotRight + 44))\" y2=\"\(f(legendY))\" "
                       + "stroke=\"\(color)\" stroke-width=\"3\"\(dash)/>")
            let last = points.last.map { " (\(bytes ? String(format: "%.1f B", $0.y) : formatNs($0.y)) @\(groupThousands($0.x)))" } ?? ""
            out.append(text(plotRight + 50, legendY + 4, impl.rawValue, weight: impl == .c ? "bold" : "normal"))
            out.append(text(plotRight + 50, legendY + 18, last, size: 10, color: "#666"))
            legendY += 36
        }
        return out
    }

    private func bytesLabel(_ bytes: Double) -> String {
        if bytes >= 1e6 { return "\(groupThousands(Int(bytes / 1e6))) MB" }
        if bytes >= 1e3 { return "\(groupThousands(Int(bytes / 1e3))) kB" }
        if bytes >= 1 { return "\(Int(bytes)) B" }
        return String(format: "%.2g B", bytes)
    }

    private func nsLabel(_ ns: Double) -> String {
        if ns >= 1e9 { return "\(groupThousands(Int(ns / 1e9))) s" }
        if ns >= 1e6 { return "\(groupThousands(Int(ns / 1e6))) ms" }
        if ns >= 1e3 { return "\(groupThousands(Int(ns / 1e3))) µs" }
        if ns >= 1 { return "\(Int(ns)) ns" }
        return String(format: "%.2g ns", ns)
    }

    private func f(_ x: Double) -> String { String(format: "%.1f", x) }

    private func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, color: String, width: Double = 1) -> String {
        "<line x1=\"\(f(x1))\" y1=\"\(f(y1))\" x2=\"\(f(x2))\" y2=\"\(f(y2))\" stroke=\"\(color)\" stroke-width=\"\(width)\"/>"
    }

    private func text(_ x: Double, _ y: Double, _ content: String, anchor: String = "start", size: Double = 12,
                      weight: String = "normal", color: String = "#222", rotate: Double? = nil) -> String {
        let transform = rotate.map { " transform=\"rotate(\($0) \(f(x)) \(f(y)))\"" } ?? ""
        return "<text x=\"\(f(x))\" y=\"\(f(y))\" text-anchor=\"\(anchor)\" font-size=\"\(size)\" font-weight=\"\(weight)\" "
            + "fill=\"\(color)\"\(transform)>\(escape(content))</text>"
    }

    private func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}

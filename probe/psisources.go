package probe

// psiSources are the two pressure files of the host (/proc/pressure) or of
// a cgroup (cpu.pressure, memory.pressure), with the reasons to give when
// they are missing, built once.
type psiSources struct {
	cpu, memory psiSource
}

type psiSource struct {
	file           *pseudoFile
	noFile, noFull string
}

func newPSISources(cpu, memory *pseudoFile) psiSources {
	src := func(f *pseudoFile) psiSource {
		return psiSource{
			file:   f,
			noFile: "PSI not available: " + f.path + ": no such file",
			noFull: "no \"full\" line in " + f.path + " (kernel before 5.13)",
		}
	}
	return psiSources{cpu: src(cpu), memory: src(memory)}
}

func (p psiSources) read(rd *fileReader) Pressure {
	var out Pressure
	out.CPUSome, out.CPUFull = p.cpu.read(rd)
	out.MemorySome, out.MemoryFull = p.memory.read(rd)
	return out
}

func (s psiSource) read(rd *fileReader) (some, full Signal) {
	data, err := rd.readFile(s.file)
	if err != nil {
		if missing(err) {
			return unknown(s.noFile), unknown(s.noFile)
		}
		u := unknown("PSI not available: " + err.Error())
		return u, u
	}
	p, err := parsePSI(data)
	if err != nil {
		u := unknown(s.file.path + ": " + err.Error())
		return u, u
	}
	some, full = known(p.some), known(p.full)
	if !p.hasFull {
		full = unknown(s.noFull)
	}
	return some, full
}

package sessionkeys

// lastRead is what Run read last (tests wait for a read).
func (s *Source) lastRead() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

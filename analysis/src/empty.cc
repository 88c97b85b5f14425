// Keeps dcpsim_analysis a real library before its first workflow lands.

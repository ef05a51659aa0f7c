// Re-exports every operator, one file each, named as in Reactor. (Owned by the operators work.)
export {};
